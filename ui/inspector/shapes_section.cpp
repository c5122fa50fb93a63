#include "ui/inspector/shapes_section.h"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include "ui/document/graph_edits.h"
#include "ui/document/project_document.h"
#include "ui/inspector/axis_names_editor.h"
#include "ui/inspector/design_lookup.h"
#include "ui/inspector/error_marks.h"
#include "ui/inspector/field_text.h"

namespace shardlab::ui {

namespace {

constexpr int kFirstParamRow = 2;  // after "inputs" and "output"

QString describeText(const graph::ArrayInfo& a) { return QString::fromStdString(graph::describe(a)); }

QString dims(const Shape& s) {
  QStringList parts;
  for (int64_t d : s) parts << QString::number(d);
  return "(" + parts.join(", ") + ")";
}

QStringList toQt(const std::vector<std::string>& v) {
  QStringList out;
  for (const std::string& s : v) out << QString::fromStdString(s);
  return out;
}

QLabel* selectableLabel(const QString& objectName, QWidget* parent) {
  auto* l = new QLabel(parent);
  l->setObjectName(objectName);
  l->setWordWrap(true);
  l->setTextInteractionFlags(Qt::TextSelectableByMouse);
  return l;
}

// "axes [editor]": says what the line edit under a shape is for.
QWidget* labelled(const QString& text, QWidget* editor, QWidget* parent) {
  auto* box = new QWidget(parent);
  auto* row = new QHBoxLayout(box);
  row->setContentsMargins(0, 0, 0, 0);
  auto* label = new QLabel(text, box);
  label->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  label->setContentsMargins(0, 4, 0, 0);  // level with the line edit's text
  row->addWidget(label);
  editor->setParent(box);
  row->addWidget(editor, 1);
  return box;
}

}  // namespace

ShapesSection::ShapesSection(ProjectDocument* doc, const QString& path, QWidget* parent)
    : QWidget(parent), doc_(doc), path_(path) {
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  form_ = new QFormLayout;
  form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form_->setRowWrapPolicy(QFormLayout::DontWrapRows);
  column->addLayout(form_);

  inputs_ = selectableLabel("shape:inputs", this);
  form_->addRow(tr("inputs"), inputs_);

  auto* out = new QWidget(this);
  auto* outColumn = new QVBoxLayout(out);
  outColumn->setContentsMargins(0, 0, 0, 0);
  outColumn->setSpacing(2);
  output_ = selectableLabel("shape:output", out);
  outputSharding_ = selectableLabel("sharding:output", out);
  outputSharding_->setTextInteractionFlags(Qt::TextBrowserInteraction);
  connect(outputSharding_, &QLabel::linkActivated, doc_, &ProjectDocument::requestArray);
  outputAxes_ = new AxisNamesEditor("output", out);
  outColumn->addWidget(output_);
  outColumn->addWidget(labelled(tr("axes"), outputAxes_, out));
  outColumn->addWidget(outputSharding_);
  form_->addRow(tr("output"), out);
  connect(outputAxes_, &AxisNamesEditor::valueEdited, this, [this] { emit outputAxesEdited(toQt(outputAxes_->value())); });

  stats_ = selectableLabel("nodeStats", this);
  form_->addRow(tr("size"), stats_);
  note_ = makeNoteLabel({}, this);
  note_->setObjectName("shapesNote");
  column->addWidget(note_);
}

ShapesSection::ParamRow ShapesSection::makeParamRow(const QString& name, bool editable) {
  ParamRow row;
  row.label = new QLabel(name, this);
  row.box = new QWidget(this);
  auto* column = new QVBoxLayout(row.box);
  column->setContentsMargins(0, 0, 0, 0);
  column->setSpacing(2);
  row.shape = selectableLabel("shape:" + name, row.box);
  row.sharding = selectableLabel("sharding:" + name, row.box);
  row.sharding->setTextInteractionFlags(Qt::TextBrowserInteraction);
  connect(row.sharding, &QLabel::linkActivated, doc_, &ProjectDocument::requestArray);
  column->addWidget(row.shape);
  if (editable) {
    row.axes = new AxisNamesEditor(name, row.box);
    column->addWidget(labelled(tr("axes"), row.axes, row.box));
    connect(row.axes, &AxisNamesEditor::valueEdited, this, [this, name, axes = row.axes] { emit paramAxesEdited(name, toQt(axes->value())); });
  }
  column->addWidget(row.sharding);
  return row;
}

void ShapesSection::removeParamRow(const QString& name) {
  const ParamRow row = params_.take(name);
  order_.removeAll(name);
  form_->takeRow(row.box);
  // Later, not now: the row may be where the signal that led here came from.
  for (QWidget* w : {static_cast<QWidget*>(row.label), row.box}) {
    w->hide();
    w->deleteLater();
  }
}

QString ShapesSection::shardingText(const std::string& array) const {
  const sharding::ArraySharding* a = lookup::array(doc_->design(), array);
  if (!a) return {};
  if (!a->error.empty()) {
    const QColor c = errorColor();
    return QString("<span style=\"color:%1\">%2</span>").arg(c.name(), QString::fromStdString(a->error).toHtmlEscaped());
  }
  return tr("<a href=\"%1\">%2</a> · %3 per device")
      .arg(QString::fromStdString(array).toHtmlEscaped(), QString::fromStdString(a->spec_text()).toHtmlEscaped(), dims(a->shard));
}

void ShapesSection::refresh() {
  const std::string path = path_.toStdString();
  const graph::Node* node = edits::find_node(doc_->project(), path);
  if (!node) return;  // the selection that drops it follows
  const graph::NodeReport* r = lookup::report(doc_->design(), path);
  const bool ok = r && r->error.empty();
  const bool stacked = node->type == "Repeat";

  // Inputs, one line per port.
  QStringList inputs;
  if (r && node->type != "Input") {
    std::unique_ptr<graph::Layer> layer = graph::create_layer(node->type);
    const std::vector<std::string> ports = layer ? layer->input_ports() : std::vector<std::string>{};
    for (size_t i = 0; i < r->inputs.size(); ++i)
      inputs << (ports.size() > 1 && i < ports.size() ? QString::fromStdString(ports[i]) + ": " : QString()) + describeText(r->inputs[i]);
  }
  inputs_->setText(inputs.join("\n"));
  form_->setRowVisible(inputs_, node->type != "Input");

  // The output and its logical names.
  output_->setText(ok ? describeText(r->output) : QString("—"));
  outputSharding_->setText(ok ? shardingText(path) : QString());
  outputSharding_->setVisible(!outputSharding_->text().isEmpty());
  outputAxes_->setState(ok ? int(r->output.shape.size()) : -1, ok ? lookup::inferredOutputAxes(*node, *r) : std::vector<std::string>{},
                        fieldtext::namesOf(node->output_axes));

  // Parameters: rows follow the layer's list; a row someone is typing in stays until they leave it.
  const std::vector<graph::ParamInfo> none;
  const std::vector<graph::ParamInfo>& params = r ? r->params : none;
  QStringList names;
  for (const graph::ParamInfo& p : params) names << QString::fromStdString(p.name);
  for (const QString& name : QStringList(order_))
    if (!names.contains(name) && !params_[name].box->isAncestorOf(focusWidget())) removeParamRow(name);
  for (int i = 0; i < names.size(); ++i) {
    const QString& name = names[i];
    if (!params_.contains(name)) {
      ParamRow row = makeParamRow(name, !stacked);
      const int at = std::min(i, int(order_.size()));
      form_->insertRow(kFirstParamRow + at, row.label, row.box);
      order_.insert(at, name);
      params_.insert(name, row);
    }
    const graph::ParamInfo& p = params[size_t(i)];
    const ParamRow& row = params_[name];
    // A shared parameter (Attend's table) is its owner's array: shown, and split, as that one.
    row.shape->setText(describeText({p.shape, p.axes}) +
                       (p.tied.empty() ? QString() : tr(" · shared with %1").arg(QString::fromStdString(p.tied))));
    const QString sharding = shardingText(p.tied.empty() ? path + "/" + p.name : p.tied);
    row.sharding->setText(sharding);
    row.sharding->setVisible(!sharding.isEmpty());
    if (row.axes) {
      const std::vector<std::string> current =
          node->param_axes.is_object() && node->param_axes.contains(p.name) ? fieldtext::namesOf(node->param_axes[p.name]) : std::vector<std::string>{};
      row.axes->setState(int(p.shape.size()), lookup::defaultParamAxes(*node, *r, p.name), current);
    }
  }

  stats_->setText(r ? tr("%1 parameters · %2FLOPs forward").arg(fieldtext::formatCount(double(r->param_count)), fieldtext::formatFlops(r->flops) + " ")
                    : QString("—"));
  if (!r) note_->setText(tr("Shapes show once the error above is fixed."));
  else if (stacked && !params.empty())
    note_->setText(tr("The block's parameters are stacked on a leading 'layer' axis; name their axes on the block's nodes."));
  else note_->clear();
  note_->setVisible(!note_->text().isEmpty());
}

}  // namespace shardlab::ui
