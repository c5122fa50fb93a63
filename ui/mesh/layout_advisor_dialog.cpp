#include "ui/mesh/layout_advisor_dialog.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QDialogButtonBox>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QThread>
#include <QVBoxLayout>
#include <memory>

#include "ui/document/project_document.h"
#include "ui/mesh/format.h"

namespace shardlab::ui {

namespace {

enum Column { RankColumn, StrategyColumn, MeshColumn, MemoryColumn, FitsColumn, PredictedColumn, BoundColumn, RulesColumn, ColumnCount };

QString q(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

LayoutAdvisorDialog::LayoutAdvisorDialog(ProjectDocument* doc, QWidget* parent) : QDialog(parent), doc_(doc) {
  setObjectName("layoutAdvisor");
  setWindowTitle(tr("Suggest Layouts"));
  devices_ = new QSpinBox(this);
  devices_->setObjectName("advisorDevices");
  devices_->setRange(1, 4096);
  int64_t n = 8;
  try {
    n = std::max<int64_t>(2, sharding::project_mesh(doc_->project()).device_count());
  } catch (const std::exception&) {
    // A mesh being edited into shape: suggest for seed 002's 8 devices.
  }
  devices_->setValue(int(n));
  // This machine (its saved calibration, measured on first use) or a written profile.
  hardware_ = new QComboBox(this);
  hardware_->setObjectName("advisorHardware");
  hardware_->addItem(tr("This machine"), QString());
  for (const std::string& id : api::hardware_profile_names()) hardware_->addItem(q(id), q(id));
  hardware_->setToolTip(tr("The hardware the steps are predicted on: this machine as measured (shardlab-cli calibrate), "
                           "or a written profile (an H100 node, H100 nodes over InfiniBand)"));
  suggest_ = new QPushButton(tr("Suggest"), this);
  suggest_->setObjectName("advisorSuggest");
  apply_ = new QPushButton(tr("Apply"), this);
  apply_->setObjectName("advisorApply");
  apply_->setEnabled(false);
  apply_->setToolTip(tr("Set the project's mesh and rules to the selected layout (one undo step)"));
  status_ = new QLabel(this);
  status_->setObjectName("advisorStatus");
  status_->setWordWrap(true);
  // The selected layout's rules in full: the table's column shows only those that shard.
  detail_ = new QLabel(this);
  detail_->setObjectName("advisorDetail");
  detail_->setWordWrap(true);
  detail_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  table_ = new QTableWidget(0, ColumnCount, this);
  table_->setObjectName("advisorTable");
  table_->setHorizontalHeaderLabels(
      {tr("Rank"), tr("Strategy"), tr("Mesh"), tr("Per device"), tr("Fits"), tr("Predicted step"), tr("Bound by"), tr("Rules")});
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->hide();

  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Devices:"), this));
  top->addWidget(devices_);
  top->addWidget(new QLabel(tr("on"), this));
  top->addWidget(hardware_);
  top->addWidget(suggest_);
  top->addStretch(1);
  top->addWidget(apply_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(table_, 1);
  layout->addWidget(detail_);
  layout->addWidget(status_);
  // A way out that does not need the window's title bar (a small screen, a tiling window manager).
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  buttons->setObjectName("advisorButtons");
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
  resize(980, 420);

  connect(suggest_, &QPushButton::clicked, this, &LayoutAdvisorDialog::suggest);
  connect(apply_, &QPushButton::clicked, this, [this] { applyRow(table_->currentRow()); });
  connect(table_, &QTableWidget::itemSelectionChanged, this, [this] {
    const int row = table_->currentRow();
    const bool valid = row >= 0 && row < int(candidates_.size());
    apply_->setEnabled(valid && candidates_[size_t(row)].runs());
    if (!valid) return detail_->clear();
    const advisor::Candidate& c = candidates_[size_t(row)];
    // Why it is what it is, then the layout as the command line takes it.
    detail_->setText(!c.runs() ? tr("%1 on %2 cannot run: %3").arg(q(c.strategy), q(c.mesh), q(c.error))
                               : tr("%1\n--mesh %2 --rules %3%4")
                                     .arg(q(api::explain_layout(c)), c.mesh.empty() ? tr("(one device)") : q(c.mesh), q(c.rules),
                                          c.microbatches > 0 ? tr(" --microbatches %1").arg(c.microbatches) : QString()));
  });
  connect(table_, &QTableWidget::cellDoubleClicked, this, [this](int row) { applyRow(row); });
}

void LayoutAdvisorDialog::suggest() {
  if (busy_) return;
  busy_ = true;
  suggest_->setEnabled(false);
  apply_->setEnabled(false);
  status_->setText(tr("Partitioning the named strategies and searching the model's own axes for %1 devices (the first "
                      "time on this machine, measuring it too)…")
                       .arg(devices_->value()));
  // Every candidate is partitioned for real: seconds for a large model, so never on the UI thread.
  const project::Project p = doc_->project();
  const int64_t devices = devices_->value();
  const std::string hardware = hardware_->currentData().toString().toStdString();
  struct Result {
    std::vector<advisor::Candidate> ranked;
    advisor::SearchSummary search;
    QString error;
  };
  auto result = std::make_shared<Result>();
  QThread* worker = QThread::create([result, p, devices, hardware] {
    try {
      result->ranked = api::advise_layouts(p, devices, hardware, &result->search);
    } catch (const std::exception& e) {
      result->error = QString::fromStdString(e.what());
    }
  });
  // Delivered on this dialog's thread once the worker is done; dropped if the dialog is gone.
  connect(worker, &QThread::finished, this, [this, result] {
    search_ = result->search;
    showCandidates(std::move(result->ranked), result->error);
  });
  connect(worker, &QThread::finished, worker, &QObject::deleteLater);
  worker->start();
}

void LayoutAdvisorDialog::showCandidates(std::vector<advisor::Candidate> ranked, const QString& error) {
  busy_ = false;
  suggest_->setEnabled(true);
  candidates_ = std::move(ranked);
  table_->setRowCount(int(candidates_.size()));
  int rank = 0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    const advisor::Candidate& c = candidates_[i];
    const int row = int(i);
    auto set = [&](int column, const QString& text) {
      auto* item = new QTableWidgetItem(text);
      if (!c.runs()) item->setForeground(palette().color(QPalette::Disabled, QPalette::Text));
      item->setToolTip(c.runs() ? text : q(c.error));
      table_->setItem(row, column, item);
    };
    set(RankColumn, c.runs() ? QString::number(++rank) : QStringLiteral("–"));
    set(StrategyColumn, q(c.strategy));
    set(MeshColumn, c.mesh.empty() ? tr("one device") : q(c.mesh));
    set(MemoryColumn, c.runs() ? bytesText(c.bytes_per_device) : QString());
    set(FitsColumn, !c.runs() ? QString() : c.fits ? tr("yes") : tr("no"));
    set(PredictedColumn, !c.runs()                  ? QString()
                         : c.prediction.band_s > 0 ? tr("%1 ± %2 ms").arg(c.prediction.step_s * 1e3, 0, 'f', 1).arg(c.prediction.band_s * 1e3, 0, 'f', 1)
                                                   : tr("%1 ms").arg(c.prediction.step_s * 1e3, 0, 'f', 1));
    set(BoundColumn, c.runs() ? q(c.prediction.bound_by) : tr("cannot run"));
    // What the layout splits; the names it leaves unsharded (=none) are in the tooltip and below.
    QStringList sharded;
    for (const QString& r : q(c.rules).split(','))
      if (!r.endsWith("=none")) sharded << r;
    const QString splits = sharded.isEmpty() ? tr("nothing split") : sharded.join(',');
    set(RulesColumn, !c.runs()            ? q(c.error)
                     : c.microbatches > 0 ? tr("%1, %2 microbatches").arg(splits).arg(c.microbatches)
                                          : splits);
    if (c.runs()) table_->item(row, RulesColumn)->setToolTip(q(c.rules));
  }
  table_->resizeColumnsToContents();
  if (!error.isEmpty()) status_->setText(error);
  else
    status_->setText(tr("%1 layouts on %2, best first: those that fit by predicted step time (each instruction of the "
                        "partitioned step at the profile's measured rates, collectives as latency plus bytes). Apply "
                        "one, or double-click it.")
                         .arg(candidates_.size())
                         .arg(hardware_->currentText()));
  // What the search did, in short; the whole account in the tooltip.
  QString axes;
  for (const std::string& a : search_.counts.axes) axes += (axes.isEmpty() ? "" : ", ") + q(a);
  if (error.isEmpty() && search_.counts.meshes > 0)
    status_->setText(status_->text() + tr(" Searching %1 looked at %2 assignments on %3 meshes and partitioned %4 in %5 s.")
                                           .arg(axes)
                                           .arg(search_.counts.assignments)
                                           .arg(search_.counts.meshes)
                                           .arg(search_.partitioned)
                                           .arg(search_.seconds, 0, 'f', 1));
  status_->setToolTip(search_.counts.meshes > 0 ? q(api::describe_search(search_)) : QString());
  emit candidatesReady();
}

bool LayoutAdvisorDialog::applyRow(int row) {
  if (row < 0 || row >= int(candidates_.size()) || !candidates_[size_t(row)].runs()) return false;
  const advisor::Candidate c = candidates_[size_t(row)];
  return doc_->edit(tr("Apply layout %1 on %2").arg(q(c.strategy), c.mesh.empty() ? tr("one device") : q(c.mesh)),
                    [&](project::Project& p) {
                      p.mesh = c.mesh.empty() ? graph::Json(nullptr) : sharding::mesh_to_json(sharding::parse_mesh(c.mesh));
                      p.logical_axis_rules = sharding::rules_to_json(c.rules.empty() ? sharding::LogicalRules{}
                                                                                      : sharding::parse_rules(c.rules));
                      // A pipeline's microbatches are part of its layout.
                      if (c.microbatches > 0) {
                        p.training.accumulate = c.microbatches;
                        if (!p.training_json.is_object()) p.training_json = graph::Json::object();
                        p.training_json["accumulate"] = c.microbatches;
                      }
                    });
}

}  // namespace shardlab::ui
