#include "ui/inspector/data_section.h"

#include <cmath>

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/document/project_document.h"
#include "ui/inspector/error_marks.h"

namespace shardlab::ui {

namespace {

// What each type of source takes, in the order the file writes them (data::parse_data_spec is the
// authority; this decides only which rows show), and what it cannot do without.
struct SourceType {
  const char* type;
  const char* label;
  QStringList keys;
  QStringList required;
  QStringList kept = {};  // keys with no field here that an edit keeps as the file has them
};

const QList<SourceType>& sourceTypes() {
  static const QList<SourceType> table = {
      {"fashion_mnist", QT_TRANSLATE_NOOP("DataSection", "Fashion-MNIST folder"), {"dir", "scale"}, {}},
      {"idx",
       QT_TRANSLATE_NOOP("DataSection", "IDX files (MNIST format)"),
       {"train_images", "train_labels", "test_images", "test_labels", "scale"},
       {"train_images", "train_labels"}},
      {"npy", QT_TRANSLATE_NOOP("DataSection", "NumPy .npy files"), {"features", "targets", "test_fraction", "scale", "seed"},
       {"features", "targets"}},
      // The arrays are found by their names (x_train, y_train, x_test, y_test, or x and y); other
      // names are written in the project file, and kept.
      {"npz",
       QT_TRANSLATE_NOOP("DataSection", "NumPy .npz file"),
       {"file", "test_fraction", "scale", "seed"},
       {"file"},
       {"features", "targets", "test_features", "test_targets"}},
      {"synthetic",
       QT_TRANSLATE_NOOP("DataSection", "Synthetic"),
       {"kind", "feature_shape", "target_shape", "classes", "examples", "test_fraction", "scale", "seed"},
       {"feature_shape", "examples"}},
  };
  return table;
}

const SourceType* sourceType(const QString& type) {
  for (const SourceType& t : sourceTypes())
    if (type == t.type) return &t;
  return nullptr;
}

bool isPathKey(const QString& key) {
  static const QStringList paths = {"dir", "train_images", "train_labels", "test_images", "test_labels", "features", "targets", "file"};
  return paths.contains(key);
}

// Synthetic targets: integer labels (blobs, copy) take `classes`, the others a target shape.
bool labelledKind(const QString& kind) { return kind == "blobs" || kind == "copy"; }

QString valueText(const QString& key, const graph::Json& v) {
  if (v.is_string()) return QString::fromStdString(v.get<std::string>());
  if (v.is_array()) {
    QStringList dims;
    for (const auto& d : v) dims << QString::fromStdString(d.dump());
    return dims.join(", ");
  }
  if (key == "scale" && v.is_number() && std::abs(v.get<double>() * 255.0 - 1.0) < 1e-9) return "1/255";
  return QString::fromStdString(v.dump());
}

}  // namespace

DataSection::DataSection(ProjectDocument* doc, const InspectorPage* page)
    : QGroupBox(tr("Data")), doc_(doc), page_(page) {
  setObjectName("dataSection");
  auto* column = new QVBoxLayout(this);
  form_ = new QFormLayout;
  form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  column->addLayout(form_);

  type_ = new QComboBox(this);
  type_->setObjectName("dataType");
  for (const SourceType& t : sourceTypes()) type_->addItem(tr(t.label), QString(t.type));
  type_->setToolTip(tr("Where the training examples come from"));
  form_->addRow(tr("source"), type_);

  addPathField("dir", tr("folder"), "dataDir", true,
               tr("The folder holding Fashion-MNIST's four IDX files (train-images-idx3-ubyte.gz, …)"));
  fields_["dir"].edit->setPlaceholderText(QString::fromUtf8(data::kFashionMnistDefaultDir));
  addPathField("train_images", tr("train images"), "dataTrainImages", false, tr("An IDX file of training examples, gzipped or not"));
  addPathField("train_labels", tr("train labels"), "dataTrainLabels", false, tr("An IDX file of their class labels"));
  addPathField("test_images", tr("test images"), "dataTestImages", false, tr("Optional: an IDX file of test examples"));
  addPathField("test_labels", tr("test labels"), "dataTestLabels", false, tr("Optional: their labels (with test images)"));
  addPathField("features", tr("features"), "dataFeatures", false, tr("A .npy array [N, …]: one example per row"));
  addPathField("targets", tr("targets"), "dataTargets", false,
               tr("A .npy array [N, …]: integer class labels, or float targets for regression"));
  addPathField("file", tr("file"), "dataFile", false,
               tr("An .npz archive (np.savez) holding x_train, y_train and x_test, y_test (as Keras's mnist.npz), or x and y"));

  kind_ = new QComboBox(this);
  kind_->setObjectName("dataKind");
  kind_->addItems({"normal", "ones", "blobs", "copy"});
  kind_->setToolTip(tr("normal or ones: random or constant features and targets; blobs: class clusters with integer "
                       "labels; copy: token sequences to copy (for causal models)"));
  form_->addRow(tr("kind"), kind_);
  addTextField("feature_shape", tr("example shape"), "dataFeatureShape", "28, 28", tr("The shape of one example"));
  addTextField("target_shape", tr("target shape"), "dataTargetShape", "10", tr("The shape of one example's target"));
  addTextField("classes", tr("classes"), "dataClasses", "10", tr("How many classes the integer labels run over"));
  addTextField("examples", tr("examples"), "dataExamples", "1024", tr("How many examples to make"));
  addTextField("test_fraction", tr("test split"), "dataTestFraction", tr("0: none"),
               tr("The fraction held out as the test split (the last ones after a seeded shuffle), e.g. 0.1"));
  addTextField("scale", tr("normalisation"), "dataScale", tr("1 (Fashion-MNIST: 1/255)"),
               tr("Features are multiplied by this (a number or a fraction such as 1/255)"));
  addTextField("seed", tr("seed"), "dataSeed", "0", tr("The seed for made-up data and for the test split's shuffle"));

  found_ = makeNoteLabel(QString(), this);
  found_->setObjectName("dataFound");
  found_->setWordWrap(true);
  found_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  pendingNote_ = makeErrorLabel("dataPending", this);
  error_ = makeErrorLabel("error:data", this);
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  column->addWidget(found_);
  column->addWidget(pendingNote_);
  column->addWidget(error_);

  connect(type_, &QComboBox::activated, this, &DataSection::typeChosen);
  connect(kind_, &QComboBox::activated, this, [this] {
    // The other family's field starts from a value that works, so a kind switch is one edit.
    const bool labelled = labelledKind(kind_->currentText());
    QLineEdit* needed = fields_[labelled ? "classes" : "target_shape"].edit;
    if (needed->text().trimmed().isEmpty()) {
      needed->setText(labelled ? "10" : "1");
      needed->setModified(true);
    }
    showType(type_->currentData().toString());
    commit(tr("Set synthetic data kind"));
  });
  refresh();
}

void DataSection::addPathField(const char* key, const QString& label, const char* objectName, bool folder, const QString& tip) {
  Field f;
  f.edit = new QLineEdit(this);
  f.edit->setObjectName(objectName);
  f.edit->setToolTip(tip + tr(" (relative paths are relative to the project file)"));
  f.browse = new QToolButton(this);
  f.browse->setObjectName(QString(objectName) + "Browse");
  f.browse->setText(QStringLiteral("…"));
  f.browse->setToolTip(folder ? tr("Choose the folder") : tr("Choose the file"));
  f.row = new QWidget(this);
  auto* row = new QHBoxLayout(f.row);
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(f.edit, 1);
  row->addWidget(f.browse);
  auto* name = new QLabel(label, this);
  name->setBuddy(f.edit);
  form_->addRow(name, f.row);
  fields_[key] = f;
  connect(f.browse, &QToolButton::clicked, this, [this, key, folder] { browse(key, folder); });
  connect(f.edit, &QLineEdit::editingFinished, this, [this, label] { commit(tr("Set data %1").arg(label)); });
}

void DataSection::addTextField(const char* key, const QString& label, const char* objectName, const QString& placeholder,
                               const QString& tip) {
  Field f;
  f.edit = new QLineEdit(this);
  f.edit->setObjectName(objectName);
  f.edit->setPlaceholderText(placeholder);
  f.edit->setToolTip(tip);
  f.row = f.edit;
  form_->addRow(label, f.edit);
  fields_[key] = f;
  connect(f.edit, &QLineEdit::editingFinished, this, [this, label] { commit(tr("Set data %1").arg(label)); });
}

bool DataSection::retired() const { return page_->retired(); }

QString DataSection::projectFolder() const {
  const QString path = doc_->path();
  return path.isEmpty() ? QDir::currentPath() : QFileInfo(path).absolutePath();
}

void DataSection::showType(const QString& type) {
  const SourceType* t = sourceType(type);
  const bool labelled = labelledKind(kind_->currentText());
  for (auto it = fields_.begin(); it != fields_.end(); ++it) {
    bool shown = t && t->keys.contains(it.key());
    if (it.key() == "target_shape") shown = shown && !labelled;
    if (it.key() == "classes") shown = shown && labelled;
    form_->setRowVisible(it->row, shown);
  }
  form_->setRowVisible(kind_, type == "synthetic");
}

void DataSection::fill(const graph::Json& data) {
  filling_ = true;
  const QString type = data.is_object() && data.value("type", graph::Json()).is_string()
                           ? QString::fromStdString(data["type"].get<std::string>())
                           : QString();
  type_->setCurrentIndex(type_->findData(type));
  if (data.is_object() && data.contains("kind") && data["kind"].is_string())
    kind_->setCurrentText(QString::fromStdString(data["kind"].get<std::string>()));
  for (auto it = fields_.begin(); it != fields_.end(); ++it) {
    const std::string key = it.key().toStdString();
    const QString text = data.is_object() && data.contains(key) ? valueText(it.key(), data[key]) : QString();
    if (it->edit->text() != text) it->edit->setText(text);
    it->edit->setModified(false);
  }
  showType(type);
  filling_ = false;
}

void DataSection::refresh() {
  const project::Project& p = doc_->project();
  // A type held for its missing files lasts until the project's data changes beneath it.
  if (!pending_.isEmpty() && p.data_json != pendingBase_) pending_.clear();
  if (pending_.isEmpty()) {
    fill(p.data_json);
    showFieldError(nullptr, pendingNote_, {});
  }

  const api::DataSummary summary = api::describe_data(p);
  found_->setText(summary.ok ? tr("Found: %1").arg(QString::fromStdString(summary.text)) : QString());
  QStringList errors;
  if (!summary.ok) errors << QString::fromStdString(summary.error);
  for (const Diagnostic& d : doc_->design().diagnostics)
    if (d.severity == Severity::Error && d.field == "data" && d.message != summary.error) errors << QString::fromStdString(d.message);
  showFieldError(nullptr, error_, errors.join("\n"));
}

void DataSection::typeChosen() {
  if (retired() || filling_) return;
  const QString type = type_->currentData().toString();
  if (type == "synthetic") {
    // Made-up data needs a shape and a size: a new choice starts from the blank project's.
    const graph::Json defaults = project::blank_project().data_json;
    for (const char* key : {"feature_shape", "target_shape", "examples"}) {
      QLineEdit* edit = fields_[key].edit;
      if (edit->text().trimmed().isEmpty()) {
        edit->setText(valueText(key, defaults[key]));
        edit->setModified(true);
      }
    }
  }
  showType(type);
  commit(tr("Set data source"));
}

void DataSection::browse(const char* key, bool folder) {
  if (retired() || qEnvironmentVariableIsSet("SHARDLAB_NO_DIALOGS")) return;  // tests type the path instead
  QLineEdit* edit = fields_[key].edit;
  const QString current = edit->text().trimmed();
  const QString start = current.isEmpty() ? projectFolder() : QDir(projectFolder()).absoluteFilePath(current);
  const bool npy = QString(key) == "features" || QString(key) == "targets";
  const QString filter = npy                     ? tr("NumPy arrays (*.npy);;All files (*)")
                         : QString(key) == "file" ? tr("NumPy archives (*.npz);;All files (*)")
                                                  : tr("IDX files (*-ubyte *-ubyte.gz *.idx *.gz);;All files (*)");
  const QString chosen = folder ? QFileDialog::getExistingDirectory(this, tr("Data Folder"), start)
                                : QFileDialog::getOpenFileName(this, tr("Data File"), start, filter);
  if (chosen.isEmpty()) return;
  // Inside the project's folder a path is kept relative, so the project moves with its data.
  const QString relative = QDir(projectFolder()).relativeFilePath(chosen);
  edit->setText(relative.startsWith("..") ? QDir::cleanPath(chosen) : relative);
  edit->setModified(true);
  commit(tr("Set data %1").arg(QString(key).replace('_', ' ')));
}

graph::Json DataSection::draft() const {
  const QString type = type_->currentData().toString();
  const SourceType* t = sourceType(type);
  const graph::Json& current = doc_->project().data_json;
  const bool sameType = current.is_object() && current.value("type", graph::Json()) == type.toStdString();
  const std::string where = doc_->project().display_name() + ": data.";
  graph::Json j = graph::Json::object();
  j["type"] = type.toStdString();
  if (!t) return j;
  const bool labelled = labelledKind(kind_->currentText());
  if (sameType)
    for (const QString& key : t->kept)
      if (current.contains(key.toStdString())) j[key.toStdString()] = current[key.toStdString()];
  for (const QString& key : t->keys) {
    const std::string k = key.toStdString();
    if (key == "kind") {
      j["kind"] = kind_->currentText().toStdString();
      continue;
    }
    if ((key == "target_shape" && labelled) || (key == "classes" && !labelled)) continue;
    const QLineEdit* edit = fields_[key].edit;
    // What the person did not touch stays exactly as the file has it (no rounding through text).
    if (sameType && !edit->isModified()) {
      if (current.contains(k)) j[k] = current[k];
      continue;
    }
    const QString text = edit->text().trimmed();
    if (text.isEmpty()) continue;
    if (isPathKey(key)) {
      j[k] = text.toStdString();
    } else if (key == "feature_shape" || key == "target_shape") {
      graph::Json dims = graph::Json::array();
      for (const QString& part : QString(text).remove(QRegularExpression("[\\[\\]()]")).split(QRegularExpression("[,\\s]+"), Qt::SkipEmptyParts)) {
        bool ok = false;
        const qlonglong n = part.toLongLong(&ok);
        if (!ok) throw Error(where + k + ": expected sizes such as 28, 28, got '" + text.toStdString() + "'");
        dims.push_back(n);
      }
      j[k] = dims;
    } else if (key == "classes" || key == "examples" || key == "seed") {
      bool ok = false;
      const qlonglong n = text.toLongLong(&ok);
      if (!ok) throw Error(where + k + ": expected a whole number, got '" + text.toStdString() + "'");
      if (key == "seed" && n >= 0) j[k] = uint64_t(n);
      else j[k] = int64_t(n);
    } else {  // scale, test_fraction: a number, or a fraction such as 1/255
      const QStringList parts = text.split('/');
      bool ok = parts.size() <= 2;
      double value = ok ? parts[0].trimmed().toDouble(&ok) : 0;
      if (ok && parts.size() == 2) {
        const double below = parts[1].trimmed().toDouble(&ok);
        ok = ok && below != 0;
        if (ok) value /= below;
      }
      if (!ok) throw Error(where + k + ": expected a number such as 0.5 or 1/255, got '" + text.toStdString() + "'");
      j[k] = value;
    }
  }
  return j;
}

void DataSection::commit(const QString& what) {
  if (retired() || filling_) return;
  const QString type = type_->currentData().toString();
  const SourceType* t = sourceType(type);
  if (!t) return;
  QStringList missing;
  for (const QString& key : t->required)
    if (fields_[key].edit->text().trimmed().isEmpty()) missing << key;
  const project::Project& p = doc_->project();
  if (!missing.isEmpty()) {
    // Not an edit yet: the project keeps the data it has until the new source is complete.
    if (pending_.isEmpty()) pendingBase_ = p.data_json;
    pending_ = type;
    showFieldError(nullptr, pendingNote_,
                   tr("Choose %1 to train on %2; until then the project keeps its %3 data.")
                       .arg(missing.join(tr(" and ")), type_->currentText(),
                            QString::fromStdString(p.data_json.value("type", std::string("current")))));
    return;
  }
  pending_.clear();
  showFieldError(nullptr, pendingNote_, {});
  try {
    if (draft() == p.data_json) return;  // focus left a field nobody changed
  } catch (const Error&) {
    // refused below, through the document, so the Log has it
  }
  const bool done = doc_->edit(what, [&](project::Project& q) {
    graph::Json j = draft();
    q.data = data::parse_data_spec(j, q.display_name() + ": data");
    q.data_json = std::move(j);
  });
  if (!done) showFieldError(nullptr, error_, doc_->lastError());
}

}  // namespace shardlab::ui
