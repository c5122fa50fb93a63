#include "ui/inspector/node_page.h"

#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QVBoxLayout>

#include "ui/document/graph_edits.h"
#include "ui/document/project_document.h"
#include "ui/inspector/design_lookup.h"
#include "ui/inspector/error_marks.h"
#include "ui/inspector/field_editor.h"
#include "ui/inspector/field_text.h"
#include "ui/inspector/shapes_section.h"

namespace shardlab::ui {

namespace {

using graph::Json;

std::vector<std::string> toStd(const QStringList& l) {
  std::vector<std::string> out;
  for (const QString& s : l) out.push_back(s.toStdString());
  return out;
}

QString leafOf(const QString& path) { return QString::fromStdString(edits::leaf_of(path.toStdString())); }

}  // namespace

NodePage::NodePage(ProjectDocument* doc, const QStringList& paths, const QString& type, QWidget* parent)
    : InspectorPage(parent), doc_(doc), paths_(paths), type_(type) {
  setObjectName("nodePage");
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(8, 8, 8, 8);
  buildHeader();
  buildFields();
  if (paths_.size() == 1) {
    auto* box = new QGroupBox(tr("Arrays"), this);
    auto* boxColumn = new QVBoxLayout(box);
    shapes_ = new ShapesSection(doc_, paths_.first(), box);
    boxColumn->addWidget(shapes_);
    column->addWidget(box);
    connect(shapes_, &ShapesSection::paramAxesEdited, this, &NodePage::applyParamAxes);
    connect(shapes_, &ShapesSection::outputAxesEdited, this, &NodePage::applyOutputAxes);
  }
  column->addStretch(1);
  refresh();
}

void NodePage::buildHeader() {
  auto* column = static_cast<QVBoxLayout*>(layout());
  graph::LayerInfo info;
  bool known = true;
  try {
    info = graph::layer_info(type_.toStdString());
  } catch (const std::exception&) {
    known = false;
  }
  title_ = new QLabel(this);
  title_->setObjectName("nodeTitle");
  QFont bold = title_->font();
  bold.setBold(true);
  bold.setPointSizeF(bold.pointSizeF() * 1.15);
  title_->setFont(bold);
  title_->setText(paths_.size() == 1 ? type_ : tr("%1 %2 nodes").arg(paths_.size()).arg(type_));
  column->addWidget(title_);
  QLabel* summary = makeNoteLabel(known ? QString::fromStdString(info.category + " · " + info.summary) : tr("unknown layer type"), this);
  summary->setObjectName("nodeSummary");
  column->addWidget(summary);

  if (paths_.size() == 1) {
    auto* form = new QFormLayout;
    auto* nameBox = new QWidget(this);
    auto* nameColumn = new QVBoxLayout(nameBox);
    nameColumn->setContentsMargins(0, 0, 0, 0);
    nameColumn->setSpacing(2);
    name_ = new QLineEdit(leafOf(paths_.first()), nameBox);
    name_->setObjectName("nodeName");
    name_->setToolTip(tr("The node's name: letters, digits, '_' and '-'. Press Enter to rename."));
    nameError_ = makeErrorLabel("error:nodeName", nameBox);
    nameColumn->addWidget(name_);
    nameColumn->addWidget(nameError_);
    form->addRow(tr("name"), nameBox);
    const std::string parent = edits::parent_of(paths_.first().toStdString());
    if (!parent.empty()) form->addRow(tr("in block"), new QLabel(QString::fromStdString(parent), this));
    column->addLayout(form);
    connect(name_, &QLineEdit::textEdited, this, [this](const QString& text) { showFieldError(name_, nameError_, nameProblem(text.trimmed())); });
    connect(name_, &QLineEdit::editingFinished, this, &NodePage::nameEditingFinished);
  } else {
    members_ = makeNoteLabel(paths_.join(", "), this);
    members_->setObjectName("nodeMembers");
    column->addWidget(members_);
  }
  nodeError_ = makeErrorLabel("nodeError", this);
  column->addWidget(nodeError_);
}

void NodePage::buildFields() {
  std::vector<graph::FieldInfo> fields;
  try {
    fields = graph::layer_info(type_.toStdString()).fields;
  } catch (const std::exception&) {
  }
  auto* box = new QGroupBox(paths_.size() == 1 ? tr("Fields") : tr("Shared fields"), this);
  box->setObjectName("fieldsBox");
  auto* form = new QFormLayout(box);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  for (const graph::FieldInfo& f : fields) {
    auto* editor = new FieldEditor(f, box);
    auto* label = new QLabel(QString::fromStdString(f.key) + (f.required ? " *" : ""), box);
    label->setToolTip(QString::fromStdString(f.help) + (f.required ? tr(" (required)") : QString()));
    form->addRow(label, editor);
    fields_ << editor;
    connect(editor, &FieldEditor::valueEdited, this, [this, editor] { applyField(editor); });
    connect(editor, &FieldEditor::refused, this, [this, key = QString::fromStdString(f.key)](const QString& reason) {
      doc_->message("warning", tr("Edit of %1 refused: %2").arg(key, reason));
    });
  }
  if (fields.empty()) form->addRow(makeNoteLabel(tr("%1 has no fields.").arg(type_), box));
  static_cast<QVBoxLayout*>(layout())->addWidget(box);
}

void NodePage::refresh() {
  const project::Project& p = doc_->project();
  std::vector<const graph::Node*> nodes;
  for (const QString& path : paths_) {
    const graph::Node* n = edits::find_node(p, path.toStdString());
    if (!n) return;  // gone (undo); the selection change that drops it follows
    nodes.push_back(n);
  }

  if (name_ && !name_->isModified() && name_->text() != leafOf(paths_.first())) {
    name_->setText(leafOf(paths_.first()));
    showFieldError(name_, nameError_, {});
  }

  QStringList errors;
  for (const QString& path : paths_) {
    const std::string e = lookup::nodeError(doc_->design(), path.toStdString());
    if (!e.empty()) errors << (paths_.size() == 1 ? QString() : path + ": ") + QString::fromStdString(e);
  }
  showFieldError(nullptr, nodeError_, errors.join("\n"));

  for (FieldEditor* editor : fields_) {
    const graph::FieldInfo& f = editor->info();
    auto stored = [&](const graph::Node* n) {
      // Stored defaults and unset keys mean the same; compare what they mean.
      return fieldtext::normalize(f, n->params.is_object() && n->params.contains(f.key) ? n->params[f.key] : Json());
    };
    const Json first = stored(nodes.front());
    const bool same = std::all_of(nodes.begin(), nodes.end(), [&](const graph::Node* n) { return stored(n) == first; });
    if (same) editor->setStored(first);
    else editor->setMixed();
  }
  if (shapes_) shapes_->refresh();
}

void NodePage::setPath(const QString& path) {
  paths_ = {path};
  name_->setText(leafOf(path));
  showFieldError(name_, nameError_, {});
  if (shapes_) shapes_->setPath(path);
}

void NodePage::showNameError(const QString& error) { showFieldError(name_, nameError_, error); }

QString NodePage::nameProblem(const QString& name) const {
  if (name.isEmpty()) return tr("name: required");
  static const QRegularExpression allowed("^[A-Za-z0-9_-]+$");
  if (!allowed.match(name).hasMatch()) return tr("name: '%1' is not a valid name (use letters, digits, '_' and '-')").arg(name);
  const std::string path = paths_.first().toStdString();
  const graph::Graph* g = edits::graph_at(doc_->project(), edits::parent_of(path));
  if (g && name.toStdString() != edits::leaf_of(path) && g->find(name.toStdString()))
    return tr("name: a node named '%1' already exists").arg(name);
  return {};
}

void NodePage::nameEditingFinished() {
  if (retired() || !name_->isModified()) return;
  const QString name = name_->text().trimmed();
  if (name == leafOf(paths_.first())) {
    name_->setText(name);  // clears the modified mark
    showFieldError(name_, nameError_, {});
    return;
  }
  const QString problem = nameProblem(name);
  showFieldError(name_, nameError_, problem);
  if (problem.isEmpty()) emit renameRequested(name);
}

void NodePage::applyField(FieldEditor* editor) {
  if (retired()) return;
  const std::string key = editor->info().key;
  const Json value = editor->value();
  const std::vector<std::string> paths = toStd(paths_);
  const QString text = paths_.size() == 1 ? tr("Set %1 of %2").arg(QString::fromStdString(key), paths_.first())
                                          : tr("Set %1 of %2 nodes").arg(QString::fromStdString(key)).arg(paths_.size());
  // One key per field and node set: typing a number is one undo step, whatever its length.
  const QString mergeKey = "field:" + paths_.join(",") + "." + QString::fromStdString(key);
  if (!doc_->edit(text, [&](project::Project& p) {
        for (const std::string& path : paths) edits::set_field(p, path, key, value);
      }, mergeKey))
    showRefusal();
}

void NodePage::applyParamAxes(const QString& param, const QStringList& names) {
  if (retired()) return;
  const std::string path = paths_.first().toStdString(), name = param.toStdString();
  const std::vector<std::string> axes = toStd(names);
  if (!doc_->edit(tr("Set %1 axes of %2").arg(param, paths_.first()),
                  [&](project::Project& p) { edits::set_param_axes(p, path, name, axes); }, "axes:" + paths_.first() + "/" + param))
    showRefusal();
}

void NodePage::applyOutputAxes(const QStringList& names) {
  if (retired()) return;
  const std::string path = paths_.first().toStdString();
  const std::vector<std::string> axes = toStd(names);
  if (!doc_->edit(tr("Set output axes of %1").arg(paths_.first()),
                  [&](project::Project& p) { edits::set_output_axes(p, path, axes); }, "outputAxes:" + paths_.first()))
    showRefusal();
}

void NodePage::showRefusal() { showFieldError(nullptr, nodeError_, doc_->lastError()); }

}  // namespace shardlab::ui
