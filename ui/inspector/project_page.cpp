#include "ui/inspector/project_page.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QVBoxLayout>

#include "engine/api/engine.h"
#include "ui/document/project_document.h"
#include "ui/inspector/bounded_text_edit.h"
#include "ui/inspector/data_section.h"
#include "ui/inspector/error_marks.h"
#include "ui/inspector/field_text.h"

namespace shardlab::ui {

namespace {

constexpr int kErrorsListed = 6;

QWidget* withError(QWidget* editor, QLabel* error, QWidget* parent) {
  auto* box = new QWidget(parent);
  auto* column = new QVBoxLayout(box);
  column->setContentsMargins(0, 0, 0, 0);
  column->setSpacing(2);
  column->addWidget(editor);
  column->addWidget(error);
  return box;
}

}  // namespace

ProjectPage::ProjectPage(ProjectDocument* doc, QWidget* parent) : InspectorPage(parent), doc_(doc) {
  setObjectName("projectPage");
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(8, 8, 8, 8);
  auto* title = new QLabel(tr("Project"), this);
  QFont bold = title->font();
  bold.setBold(true);
  bold.setPointSizeF(bold.pointSizeF() * 1.15);
  title->setFont(bold);
  column->addWidget(title);
  column->addWidget(makeNoteLabel(tr("Nothing is selected: these are the project's settings."), this));

  auto* general = new QGroupBox(tr("General"), this);
  auto* form = new QFormLayout(general);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  name_ = new QLineEdit(general);
  name_->setObjectName("projectName");
  nameError_ = makeErrorLabel("error:projectName", general);
  form->addRow(tr("name"), withError(name_, nameError_, general));
  description_ = new BoundedTextEdit(qsizetype(project::kMaxProjectString), general);
  description_->setObjectName("projectDescription");
  description_->setTabChangesFocus(true);
  description_->setFixedHeight(description_->fontMetrics().lineSpacing() * 5 + 12);
  descriptionError_ = makeErrorLabel("error:projectDescription", general);
  form->addRow(tr("description"), withError(description_, descriptionError_, general));
  column->addWidget(general);

  auto* loss = new QGroupBox(tr("Loss"), this);
  auto* lossForm = new QFormLayout(loss);
  lossForm->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  lossType_ = new QComboBox(loss);
  lossType_->setObjectName("lossType");
  lossType_->addItems({"softmax_cross_entropy", "mean_squared_error"});
  lossType_->setToolTip(tr("softmax cross-entropy for class labels, mean squared error for regression targets"));
  lossForm->addRow(tr("type"), lossType_);
  lossOutput_ = new QComboBox(loss);
  lossOutput_->setObjectName("lossOutput");
  lossOutput_->setToolTip(tr("The node whose output is the prediction the loss compares with the targets"));
  lossError_ = makeErrorLabel("error:lossOutput", loss);
  lossForm->addRow(tr("output"), withError(lossOutput_, lossError_, loss));
  column->addWidget(loss);

  data_ = new DataSection(doc_, this);
  column->addWidget(data_);

  // Flax's policy: param_dtype, dtype, and jax.default_matmul_precision for float32 products.
  auto* precision = new QGroupBox(tr("Precision"), this);
  auto* precisionForm = new QFormLayout(precision);
  precisionForm->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  auto dtypes = [&](const char* name, const QString& tip) {
    auto* box = new QComboBox(precision);
    box->setObjectName(name);
    box->addItems({"float32", "bfloat16", "float16"});
    box->setToolTip(tip);
    return box;
  };
  dtype_ = dtypes("computeDtype", tr("The dtype activations and matmul inputs are computed in (Flax's dtype). LayerNorm and the "
                                     "loss stay float32; a node may set its own in its precision."));
  precisionForm->addRow(tr("compute"), dtype_);
  paramDtype_ = dtypes("paramDtype", tr("The dtype parameters are stored in (Flax's param_dtype): the master weights. "
                                        "Optimizer state is float32 whatever this is."));
  precisionForm->addRow(tr("parameters"), paramDtype_);
  matmulPrecision_ = new QComboBox(precision);
  matmulPrecision_->setObjectName("matmulPrecision");
  matmulPrecision_->addItems({"highest", "tf32", "bf16"});
  matmulPrecision_->setToolTip(tr("How float32 matmuls round their operands, as jax.default_matmul_precision: highest (not at "
                                  "all), tf32 (a GPU's TensorFloat-32, emulated on the CPU) or bf16; float32 accumulation"));
  precisionForm->addRow(tr("matmuls"), matmulPrecision_);
  lossScale_ = new QCheckBox(tr("dynamic loss scaling"), precision);
  lossScale_->setObjectName("lossScaling");
  lossScale_->setToolTip(tr("Scale the loss before the backward pass and skip a step whose gradients overflow, lowering the "
                            "scale (flax.training.dynamic_scale); on by default for float16"));
  precisionForm->addRow(QString(), lossScale_);
  column->addWidget(precision);

  auto* check = new QGroupBox(tr("Design check"), this);
  auto* checkColumn = new QVBoxLayout(check);
  summary_ = new QLabel(check);
  summary_->setObjectName("projectSummary");
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setWordWrap(true);  // a long count must not widen the inspector
  errors_ = makeErrorLabel("projectErrors", check);
  checkColumn->addWidget(summary_);
  checkColumn->addWidget(errors_);
  column->addWidget(check);
  column->addStretch(1);

  connect(name_, &QLineEdit::textEdited, this, &ProjectPage::nameEdited);
  connect(description_, &QPlainTextEdit::textChanged, this, &ProjectPage::descriptionEdited);
  connect(description_, &BoundedTextEdit::pasteRefused, this, [this](qsizetype wouldBe) {
    const QString why = tr("description: the paste was refused: it would make the description %1 bytes, over a project's "
                           "limit of %2 for a text")
                            .arg(fieldtext::formatCount(double(wouldBe)), fieldtext::formatCount(double(description_->maxBytes())));
    showFieldError(description_, descriptionError_, why);
    doc_->message("warning", why);  // in the Log too, like every refused edit
  });
  connect(lossType_, &QComboBox::activated, this, &ProjectPage::lossTypeChosen);
  connect(lossOutput_, &QComboBox::activated, this, &ProjectPage::lossOutputChosen);
  connect(dtype_, &QComboBox::activated, this,
          [this] { setPrecision("dtype", dtype_->currentText().toStdString(), tr("Set compute dtype")); });
  connect(paramDtype_, &QComboBox::activated, this,
          [this] { setPrecision("param_dtype", paramDtype_->currentText().toStdString(), tr("Set parameter dtype")); });
  connect(matmulPrecision_, &QComboBox::activated, this,
          [this] { setPrecision("matmul_precision", matmulPrecision_->currentText().toStdString(), tr("Set matmul precision")); });
  connect(lossScale_, &QCheckBox::clicked, this, [this](bool on) {
    // Written only where it differs from what the compute dtype implies (on for float16).
    const bool implied = doc_->project().precision.dtype == DType::F16;
    setPrecision("loss_scale", on == implied ? graph::Json() : graph::Json(on), on ? tr("Turn loss scaling on") : tr("Turn loss scaling off"));
  });
  refresh();
}

void ProjectPage::refresh() {
  const project::Project& p = doc_->project();
  const QString name = QString::fromStdString(p.name);
  // A refused (empty) name stays in front of its typist while the stored one does not change.
  const bool keepRefused = name_->property("invalid").toBool() && name == lastName_;
  if (name_->text() != name && !keepRefused) {
    name_->setText(name);
    showFieldError(name_, nameError_, {});
  }
  lastName_ = name;

  const QString description = QString::fromStdString(p.description);
  if (description_->toPlainText() != description) {
    updating_ = true;
    description_->setTextFitted(description);
    showFieldError(description_, descriptionError_, {});
    updating_ = false;
  }

  lossType_->setCurrentIndex(lossType_->findText(QString::fromStdString(p.loss.type)));

  QStringList names;
  for (const graph::Node& n : p.graph.nodes) names << QString::fromStdString(n.name);
  const QString output = QString::fromStdString(p.loss.output);
  if (!names.contains(output)) names << output;  // shown, with the error under it
  QStringList items;
  for (int i = 0; i < lossOutput_->count(); ++i) items << lossOutput_->itemText(i);
  if (items != names) {
    lossOutput_->clear();
    lossOutput_->addItems(names);
  }
  lossOutput_->setCurrentIndex(names.indexOf(output));
  QStringList lossErrors;
  for (const std::string& e : doc_->design().errors)
    if (e.rfind("loss", 0) == 0) lossErrors << QString::fromStdString(e);
  showFieldError(lossOutput_, lossError_, lossErrors.join("\n"));

  const project::PrecisionSpec& pr = p.precision;
  dtype_->setCurrentText(QString(dtype_name(pr.dtype)));
  paramDtype_->setCurrentText(QString(dtype_name(pr.param_dtype)));
  matmulPrecision_->setCurrentText(QString(matmul_precision_name(pr.matmul_precision)));
  lossScale_->setChecked(pr.loss_scale.has_value());

  data_->refresh();
  refreshSummary();
}

void ProjectPage::setPrecision(const char* key, const graph::Json& value, const QString& what) {
  if (retired()) return;
  // Parsed as a file's section is: a value the project would refuse is refused here the same way.
  const bool done = doc_->edit(what, [&](project::Project& p) {
    graph::Json j = p.precision_json.is_object() ? p.precision_json : graph::Json::object();
    if (value.is_null()) j.erase(key);
    else j[key] = value;
    if (j.empty()) j = nullptr;  // every default: the file keeps no section
    p.precision = project::parse_precision(j, "precision");
    p.precision_json = j;
  });
  if (!done) refresh();
}

void ProjectPage::refreshSummary() {
  const api::Design& d = doc_->design();
  double params = 0, flops = 0;
  for (const graph::NodeReport& n : d.graph.nodes) params += double(n.param_count), flops += n.flops;
  summary_->setText(tr("%1 parameters · %2FLOPs forward per step\n%3 error(s) · %4 warning(s)")
                        .arg(fieldtext::formatCount(params), fieldtext::formatFlops(flops) + " ")
                        .arg(d.errors.size())
                        .arg(d.warnings.size()));
  QStringList list;
  for (size_t i = 0; i < d.errors.size() && int(i) < kErrorsListed; ++i) list << "• " + QString::fromStdString(d.errors[i]);
  if (int(d.errors.size()) > kErrorsListed) list << tr("… and %1 more (see the Log)").arg(d.errors.size() - kErrorsListed);
  showFieldError(nullptr, errors_, list.join("\n"));
}

void ProjectPage::nameEdited(const QString& text) {
  if (retired()) return;
  if (text.trimmed().isEmpty()) {
    showFieldError(name_, nameError_, tr("name: required (the project's name)"));
    return;
  }
  showFieldError(name_, nameError_, {});
  doc_->edit(tr("Rename project"), [&](project::Project& p) { p.name = text.toStdString(); }, "project:name");
}

void ProjectPage::descriptionEdited() {
  if (updating_ || retired()) return;
  const std::string text = description_->toPlainText().toStdString();
  // Typed past the bound: kept in front of the typist, not stored (the project could not be opened again).
  if (text.size() > project::kMaxProjectString) {
    showFieldError(description_, descriptionError_,
                   tr("description: %1 bytes, over a project's limit of %2 for a text; not saved until shortened")
                       .arg(fieldtext::formatCount(double(text.size())), fieldtext::formatCount(double(project::kMaxProjectString))));
    return;
  }
  showFieldError(description_, descriptionError_, {});
  doc_->edit(tr("Edit project description"), [&](project::Project& p) { p.description = text; }, "project:description");
}

void ProjectPage::lossTypeChosen() {
  if (retired()) return;
  const std::string type = lossType_->currentText().toStdString();
  doc_->edit(tr("Set loss type"), [&](project::Project& p) {
    p.loss.type = type;
    if (!p.loss_json.is_object()) p.loss_json = graph::Json::object();
    p.loss_json["type"] = type;
  });
}

void ProjectPage::lossOutputChosen() {
  if (retired()) return;
  const std::string output = lossOutput_->currentText().toStdString();
  if (!doc_->project().graph.find(output)) return;  // the missing node shown for the error
  doc_->edit(tr("Set loss output"), [&](project::Project& p) {
    p.loss.output = output;
    if (!p.loss_json.is_object()) p.loss_json = graph::Json::object();
    p.loss_json["output"] = output;
  });
}

}  // namespace shardlab::ui
