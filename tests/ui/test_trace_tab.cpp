// The Trace tab as a person uses it: a 100k-span trace over 8 devices in lanes, zoom and pan with
// keys and the wheel, a click on a span selecting its layer and showing it in the span panel
// without leaving the tab, a span inside a collapsed Repeat revealing its block on the canvas with
// only real arrays listed, a graph selection highlighting spans, a real training run followed live,
// trace files opened, refused and exported, and two runs compared layer by layer.
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QTabWidget>
#include <QDir>
#include <QElapsedTimer>
#include <QLabel>
#include <QListWidget>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <atomic>
#include <cmath>
#include <thread>

#include "engine/profiler/trace_file.h"
#include "tests/engine/test_support.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/graph_view.h"
#include "ui/canvas/node_item.h"
#include "ui/document/project_document.h"
#include "ui/main_window.h"
#include "ui/sharding/sharding_tab.h"
#include "ui/trace/layer_time_model.h"
#include "ui/trace/run_comparison.h"
#include "ui/trace/step_breakdown_chart.h"
#include "ui/trace/timeline_view.h"
#include "ui/trace/trace_tab.h"

using namespace shardlab;
using namespace shardlab::ui;
using profiler::Category;
using profiler::Span;

namespace {

constexpr int kDevices = 8, kSteps = 50, kSpansPerStep = 250;  // 8 * 50 * 250 = 100k spans

struct Synthetic {
  std::shared_ptr<profiler::Trace> trace;
  double flopsAfterWarmup = 0, wallAfterWarmup = 0;  // summed over devices, steps 2..50
};

// Ten layers per step on every device: matmuls, an all-reduce every 25 spans, Adam at the end;
// the host's data wait on device 0 before each step; a step span per device. No summaries: the
// tab derives them from the spans, as for a file.
Synthetic syntheticTrace() {
  Synthetic out;
  out.trace = std::make_shared<profiler::Trace>(profiler::Trace::Mode::Detailed, kSteps);
  double t = 0;
  for (int64_t step = 0; step < kSteps; ++step) {
    const double wait = 40;
    out.trace->add(Span{0, Category::Data, "data", "", "batch", t, wait, 0, 1 << 20, step});
    t += wait;
    double stepEnd = t;
    for (int d = 0; d < kDevices; ++d) {
      double u = t, flops = 0;
      for (int k = 0; k < kSpansPerStep; ++k) {
        const std::string node = "layer" + std::to_string(k % 10);
        const double dur = 2.0 + double((k * 7) % 13) + 0.1 * d;
        if (k % 25 == 24)
          out.trace->add(Span{d, Category::Collective, "all_reduce", node, node + "/kernel", u, dur, 0, 65536, step});
        else if (k >= 240)
          out.trace->add(Span{d, Category::Optimizer, "adam", node, node + "/kernel", u, dur, 4e4, 0, step});
        else
          out.trace->add(Span{d, Category::Compute, "matmul", node, node + "/out", u, dur, 5e5, 0, step});
        flops += k % 25 == 24 ? 0 : k >= 240 ? 4e4 : 5e5;
        u += dur + 0.5;
      }
      out.trace->add(Span{d, Category::Step, "step " + std::to_string(step + 1), "", "", t, u - t, flops, 0, step});
      if (step > 0) {
        out.flopsAfterWarmup += flops;
        out.wallAfterWarmup += u - t + wait;
      }
      stepEnd = std::max(stepEnd, u);
    }
    t = stepEnd + 5;
  }
  return out;
}

QString screenshotDir() {
  const QString dir = QStringLiteral(SHARDLAB_BINARY_DIR "/ui-screenshots");
  QDir().mkpath(dir);
  return dir;
}

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void sendWheel(QWidget* w, const QPoint& pos, int delta, Qt::KeyboardModifiers mods) {
  QWheelEvent e(QPointF(pos), QPointF(w->mapToGlobal(pos)), QPoint(), QPoint(0, delta), Qt::NoButton, mods, Qt::NoScrollPhase, false);
  QApplication::sendEvent(w, &e);
}

}  // namespace

class TestTraceTab : public QObject {
  Q_OBJECT

  ProjectDocument* doc_ = nullptr;
  TraceTab* tab_ = nullptr;
  Synthetic synthetic_;
  std::unique_ptr<QAbstractItemModelTester> tester_;
  QTemporaryDir tmp_;
  std::shared_ptr<profiler::Trace> liveTrace_;  // the real run's, for the file tests

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    // Refused files are checked through the banner and the log; a modal box would wait forever.
    qputenv("SHARDLAB_NO_DIALOGS", "1");
    doc_ = new ProjectDocument(this);
    doc_->open(QStringLiteral(SHARDLAB_SOURCE_DIR "/projects/deep-mlp-small.shardlab.json"));
    tab_ = new TraceTab(doc_);
    tab_->resize(1400, 900);
    tab_->show();
    QVERIFY(QTest::qWaitForWindowExposed(tab_));
    tester_ = std::make_unique<QAbstractItemModelTester>(tab_->comparison()->model(),
                                                         QAbstractItemModelTester::FailureReportingMode::QtTest);
    QElapsedTimer timer;
    timer.start();
    synthetic_ = syntheticTrace();
    qInfo("built a synthetic trace of %zu spans in %lld ms", synthetic_.trace->spans().size(), timer.elapsed());
  }

  void cleanupTestCase() {
    tester_.reset();
    delete tab_;
  }

  void syntheticRunFillsOneLanePerDevice() {
    QCOMPARE(tab_->timeline()->laneCount(), 0);
    QElapsedTimer timer;
    timer.start();
    tab_->followRun(synthetic_.trace, "synthetic: 8 devices", 8e11);
    qInfo("followRun of 100k spans (copy, lanes, summaries): %lld ms", timer.elapsed());
    QVERIFY(tab_->isFollowing());
    QVERIFY(tab_->timeline()->isLive());
    tab_->runFinished();
    QVERIFY(!tab_->isFollowing());
    TimelineView* tl = tab_->timeline();
    QCOMPARE(tl->laneCount(), kDevices);  // device 0's data wait does not overlap its compute: no extra lane
    for (int l = 0; l < kDevices; ++l) QCOMPARE(tl->laneName(l), QString("CPU %1").arg(l));
    QCOMPARE(tl->spanCount(), kDevices * kSteps * kSpansPerStep + kSteps);  // + the data waits
    QCOMPARE(int(tl->steps().size()), kSteps);
    // Live mode showed the newest step.
    QVERIFY(tl->viewEndUs() >= tl->traceEndUs());
    QVERIFY(tl->viewStartUs() > tl->traceStartUs());

    StepBreakdownChart* chart = tab_->breakdown();
    QCOMPARE(chart->stepCount(), kSteps);
    QCOMPARE(int(chart->devices().size()), kDevices);
    const double expected = synthetic_.flopsAfterWarmup / (synthetic_.wallAfterWarmup * 1e-6);
    QVERIFY2(std::abs(chart->achievedFlops() - expected) <= 1e-9 * expected,
             qPrintable(QString("%1 vs %2").arg(chart->achievedFlops()).arg(expected)));
    QVERIFY(std::abs(chart->mfu() - expected / (8e11 / kDevices)) < 1e-9);
    VERIFY_CONTAINS(chart->headline(), "MFU");
    // Idle per bar is what the step spans leave: 0.5 us after each primitive.
    const auto& e = chart->entry(3);
    QVERIFY(e.parts[4] > 0 && e.parts[4] < e.wallUs * 0.1);
    // Without a peak, MFU is blank.
    tab_->peakSpin()->setValue(0);
    QVERIFY(std::isnan(chart->mfu()));
    VERIFY_CONTAINS(chart->headline(), "no peak");
    tab_->peakSpin()->setValue(800);
    QVERIFY(std::abs(chart->mfu() - expected / (8e11 / kDevices)) < 1e-9);
    // One device instead of the mean.
    tab_->deviceCombo()->setCurrentIndex(tab_->deviceCombo()->findData(3));
    QCOMPARE(chart->device(), 3);
    QCOMPARE(chart->stepCount(), kSteps);
    tab_->deviceCombo()->setCurrentIndex(0);
    QCOMPARE(chart->device(), -1);
  }

  // The ruler's labels differ from tick to tick at any zoom: a narrow window far into a run says
  // "263.2 ms", "263.4 ms" (it said "263 ms" twice).
  void rulerLabelsDifferAtEveryZoom() {
    TimelineView* tl = tab_->timeline();
    tl->fitAll();
    const double start = tl->traceStartUs(), end = tl->traceEndUs();
    for (const double width : {end - start, (end - start) / 50, 2000.0, 50.0}) {
      const double from = std::max(start, end - width);
      tl->setVisibleRange(from, from + width);
      const auto ticks = tl->rulerTicks();
      QVERIFY2(ticks.size() >= 2, qPrintable(QString("%1 us wide: %2 ticks").arg(width).arg(ticks.size())));
      QStringList labels;
      for (const auto& [t, label] : ticks) labels << label;
      QCOMPARE(QSet<QString>(labels.begin(), labels.end()).size(), labels.size());
    }
  }

  void keysAndWheelZoomAndPan() {
    TimelineView* tl = tab_->timeline();
    tl->fitAll();
    const double w0 = tl->viewEndUs() - tl->viewStartUs();
    tl->setFocus();
    QTest::keyClick(tl, Qt::Key_Plus);
    const double w1 = tl->viewEndUs() - tl->viewStartUs();
    QVERIFY2(std::abs(w1 - w0 / 1.5) < 1e-6 * w0, qPrintable(QString("%1 -> %2").arg(w0).arg(w1)));
    QTest::keyClick(tl, Qt::Key_Plus);
    QTest::keyClick(tl, Qt::Key_Minus);
    QVERIFY(std::abs((tl->viewEndUs() - tl->viewStartUs()) - w1) < 1e-6 * w0);

    // Ctrl+wheel zooms around the cursor: the time under it stays put.
    QWidget* vp = tl->viewport();
    const QPoint at(TimelineView::kLabelWidth + 300, 80);
    const auto timeAt = [&](int x) {
      return tl->viewStartUs() + (x - TimelineView::kLabelWidth) * (tl->viewEndUs() - tl->viewStartUs()) / (vp->width() - TimelineView::kLabelWidth);
    };
    const double before = timeAt(at.x());
    sendWheel(vp, at, 240, Qt::ControlModifier);
    const double w2 = tl->viewEndUs() - tl->viewStartUs();
    QVERIFY2(w2 < w1 * 0.8, qPrintable(QString("%1 -> %2").arg(w1).arg(w2)));
    QVERIFY(std::abs(timeAt(at.x()) - before) < 1e-6 * w0);

    // The plain wheel pans later (down) and earlier (up); the width stays.
    const double s0 = tl->viewStartUs();
    sendWheel(vp, at, -120, Qt::NoModifier);
    QVERIFY(tl->viewStartUs() > s0);
    QVERIFY(std::abs((tl->viewEndUs() - tl->viewStartUs()) - w2) < 1e-6 * w0);
    QTest::keyClick(tl, Qt::Key_Left);
    QTest::keyClick(tl, Qt::Key_Left);
    QVERIFY(tl->viewStartUs() < s0);

    // Dragging pans too: the content follows the mouse.
    const double s1 = tl->viewStartUs();
    QTest::mousePress(vp, Qt::LeftButton, {}, QPoint(700, 80));
    QTest::mouseMove(vp, QPoint(600, 80));
    QTest::mouseRelease(vp, Qt::LeftButton, {}, QPoint(600, 80));
    QVERIFY(tl->viewStartUs() > s1);

    // Zoom to a step: the step fills the view.
    QVERIFY(tl->zoomToStep(20));
    QVERIFY(!tl->isLive());
    const double stepWidth = tl->viewEndUs() - tl->viewStartUs();
    QVERIFY(stepWidth < (tl->traceEndUs() - tl->traceStartUs()) / 40);
    QVERIFY(!tl->zoomToStep(500));
    // Live brings the newest step back.
    tl->setLive(true);
    QVERIFY(tl->viewEndUs() >= tl->traceEndUs());
    QTest::keyClick(tl, Qt::Key_Home);
    QVERIFY(!tl->isLive());
    QVERIFY(tl->viewStartUs() <= tl->traceStartUs() && tl->viewEndUs() >= tl->traceEndUs());
  }

  void paintTimeOf100kSpans() {
    TimelineView* tl = tab_->timeline();
    tl->fitAll();
    QElapsedTimer timer;
    timer.start();
    const QPixmap all = tl->grab();
    const qint64 fitMs = timer.elapsed();
    const double fitPaint = tl->lastPaintMs();
    tl->zoomToStep(25);
    timer.restart();
    tl->grab();
    const qint64 stepMs = timer.elapsed();
    qInfo("timeline paint, %d spans in view (all): grab %lld ms, paintEvent %.2f ms; one step in view: grab %lld ms, paintEvent %.2f ms",
          tl->spanCount(), fitMs, fitPaint, stepMs, tl->lastPaintMs());
    QVERIFY(!all.isNull());
    // The whole trace drawn: every lane has marks (a lane's colour under its middle row).
    const QImage img = all.toImage();
    for (int l = 0; l < tl->laneCount(); ++l) {
      const int y = TimelineView::kRulerHeight + TimelineView::kLaneGap + l * (TimelineView::kLaneHeight + TimelineView::kLaneGap) +
                    TimelineView::kLaneHeight / 2;
      const QColor c = img.pixelColor(TimelineView::kLabelWidth + 200, y);
      QVERIFY2(c != tl->palette().color(QPalette::Base) && c != tl->palette().color(QPalette::AlternateBase),
               qPrintable(QString("lane %1 is empty at x=200").arg(l)));
    }
  }

  void clickingASpanSelectsItsLayerAndArray() {
    TimelineView* tl = tab_->timeline();
    QVERIFY(tl->zoomToStep(10));
    // The longest matmul of layer7 on device 3 in step 10 (indices are the trace's own order).
    const auto spans = synthetic_.trace->spans();
    int pick = -1;
    for (int i = 0; i < int(spans.size()); ++i) {
      const Span& s = spans[size_t(i)];
      if (s.step == 10 && s.device == 3 && s.node == "layer7" && s.category == Category::Compute &&
          (pick < 0 || s.dur_us > spans[size_t(pick)].dur_us))
        pick = i;
    }
    QVERIFY(pick >= 0);
    const Span& s = spans[size_t(pick)];
    // Where it must be drawn: lane 3, at its middle in time.
    const int plot = tl->viewport()->width() - TimelineView::kLabelWidth;
    const double x = TimelineView::kLabelWidth + (s.start_us + s.dur_us / 2 - tl->viewStartUs()) / (tl->viewEndUs() - tl->viewStartUs()) * plot;
    const int y = TimelineView::kRulerHeight + TimelineView::kLaneGap + 3 * (TimelineView::kLaneHeight + TimelineView::kLaneGap) +
                  TimelineView::kLaneHeight / 2;
    const QPoint at(int(std::lround(x)), y);
    QVERIFY2(tl->spanRect(pick).contains(QPointF(at)), qPrintable(QString("rect %1,%2 %3x%4 vs %5,%6")
                                                                   .arg(tl->spanRect(pick).x()).arg(tl->spanRect(pick).y())
                                                                   .arg(tl->spanRect(pick).width()).arg(tl->spanRect(pick).height())
                                                                   .arg(at.x()).arg(at.y())));
    QCOMPARE(tl->spanAt(at), pick);

    QSignalSpy selection(doc_, &ProjectDocument::selectionChanged);
    QSignalSpy arrays(doc_, &ProjectDocument::arrayRequested);
    QSignalSpy activated(tab_, &TraceTab::spanActivated);
    QTest::mouseClick(tl->viewport(), Qt::LeftButton, {}, at);
    QCOMPARE(selection.count(), 1);
    QCOMPARE(doc_->selection(), QStringList{"layer7"});
    // No array is asked for (that would switch to the Sharding tab): the span panel shows it.
    QCOMPARE(arrays.count(), 0);
    QCOMPARE(activated.count(), 1);
    QCOMPARE(activated.at(0).at(0).toString(), QString("layer7"));
    QCOMPARE(tl->selectedSpan(), pick);
    const QString facts = tab_->spanFacts()->text();
    VERIFY_CONTAINS(facts, "matmul");
    VERIFY_CONTAINS(facts, "CPU 3");
    VERIFY_CONTAINS(facts, "layer7 (not in this project)");
    // "layer7/out" is the synthetic trace's own name; deep-mlp-small has no such array.
    QVERIFY(!facts.contains("layer7/out"));
    QCOMPARE(tab_->spanArrays()->count(), 0);
    // The selection came back as a highlight of layer7's spans.
    QCOMPARE(tl->highlightedCount(), kDevices * kSteps * kSpansPerStep / 10);

    // Clicking the ruler hits nothing.
    QTest::mouseClick(tl->viewport(), Qt::LeftButton, {}, QPoint(at.x(), 5));
    QCOMPARE(activated.count(), 1);

    // Hover details: what the tooltip says.
    const QString details = tl->spanDetails(pick);
    VERIFY_CONTAINS(details, "matmul");
    VERIFY_CONTAINS(details, "layer7");
    QVERIFY(!details.contains("layer7/out"));  // no array of this project
    VERIFY_CONTAINS(details, "step 11");  // 1-based, as the step markers
    VERIFY_CONTAINS(details, "CPU 3");
    VERIFY_CONTAINS(details, "500 kFLOP");
    VERIFY_CONTAINS(details, QString::fromUtf8("µs"));
  }

  // dot-relu-dot in the main window: a Repeat "blocks" (W1, relu, W2) on 8 devices, collapsed on
  // the canvas. Two real traced steps; a click on a W1 matmul span.
  void spanInsideACollapsedRepeatRevealsItsBlockAndListsRealArrays() {
    MainWindow w;
    QVERIFY(w.openFile(QStringLiteral(SHARDLAB_SOURCE_DIR "/projects/dot-relu-dot.shardlab.json")));
    ProjectDocument* doc = w.document();
    auto trace = std::make_shared<profiler::Trace>(profiler::Trace::Mode::Detailed, 20);
    runtime::TrainOptions o;
    o.steps = 2;
    o.threads = 2;
    o.trace = trace;
    runtime::Trainer(doc->project(), o).run();
    TraceTab* tab = w.trace();
    tab->followRun(trace, "run 1: dot-relu-dot", 0);
    tab->runFinished();
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.showTab(tab);
    GraphScene* scene = w.canvas()->graphScene();
    QVERIFY(scene->node("blocks"));
    QVERIFY(!scene->node("blocks/W1"));  // collapsed: its block's nodes are not drawn

    const auto spans = trace->spans();
    auto find = [&](const std::string& node, const char* prefix, Category c) {
      for (int i = 0; i < int(spans.size()); ++i) {
        const Span& s = spans[size_t(i)];
        if (s.step == 1 && s.device == 3 && s.node == node && s.category == c && s.name.rfind(prefix, 0) == 0) return i;
      }
      return -1;
    };
    const int pick = find("blocks/W1", "matmul", Category::Compute);
    QVERIFY(pick >= 0);
    TimelineView* tl = tab->timeline();
    const Span& s = spans[size_t(pick)];
    tl->setVisibleRange(s.start_us - s.dur_us, s.start_us + 2 * s.dur_us);
    const QPoint at = tl->spanRect(pick).center().toPoint();
    QCOMPARE(tl->spanAt(at), pick);
    QSignalSpy arrays(doc, &ProjectDocument::arrayRequested);
    QTest::mouseClick(tl->viewport(), Qt::LeftButton, {}, at);

    // The node is selected; the canvas shows its collapsed Repeat selected and marked; the tab stays.
    QCOMPARE(doc->selection(), QStringList{"blocks/W1"});
    QCOMPARE(scene->revealedIn(), QString("blocks"));
    QVERIFY(scene->node("blocks")->isSelected());
    QCOMPARE(w.currentTab(), static_cast<QWidget*>(tab));
    QCOMPARE(arrays.count(), 0);

    // The panel: device, primitive, node, times, and arrays the Sharding tab has, never
    // "<node>/<primitive>" names.
    const QString facts = tab->spanFacts()->text();
    VERIFY_CONTAINS(facts, "CPU 3");
    VERIFY_CONTAINS(facts, "matmul");
    VERIFY_CONTAINS(facts, "blocks/W1");
    VERIFY_CONTAINS(facts, "Duration");
    QVERIFY(!facts.contains("not in this project"));
    QListWidget* list = tab->spanArrays();
    QStringList listed;
    for (int i = 0; i < list->count(); ++i) listed << list->item(i)->data(Qt::UserRole).toString();
    QVERIFY2(listed.contains("blocks/W1/kernel"), qPrintable(listed.join(", ")));
    const api::Design& d = doc->design();
    for (const QString& a : listed) QVERIFY2(d.sharding.find(a.toStdString()), qPrintable(a));
    QVERIFY(w.grab().save(screenshotDir() + "/trace-span-in-repeat.png"));
    const QString tip = tl->spanDetails(pick);
    VERIFY_CONTAINS(tip, "blocks/W1/kernel");
    QVERIFY(!tip.contains("blocks/W1/matmul"));

    // Every span's tooltip names only real arrays: a collective's names no "<node>/all_reduce".
    for (int i = 0; i < int(spans.size()); ++i) {
      const Span& c = spans[size_t(i)];
      if (c.category != Category::Collective || c.step != 1) continue;
      const QString t = tl->spanDetails(i);
      QVERIFY2(!t.contains(QString::fromStdString(c.node + "/" + c.name)), qPrintable(t));
    }

    // Clicking an array in the panel opens it in the Sharding tab.
    auto* sharding = w.findChild<ShardingTab*>();
    QVERIFY(sharding);
    const int row = int(listed.indexOf("blocks/W1/kernel"));
    QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, list->visualItemRect(list->item(row)).center());
    QCOMPARE(arrays.count(), 1);
    QCOMPARE(w.currentTab(), static_cast<QWidget*>(sharding));
    QCOMPARE(sharding->currentArray(), QString("blocks/W1/kernel"));

    // Shows span `i` in the middle third of the timeline and clicks it.
    auto click_span = [&](int i) {
      const Span& sp = spans[size_t(i)];
      tl->setVisibleRange(sp.start_us - sp.dur_us, sp.start_us + 2 * sp.dur_us);
      QTest::mouseClick(tl->viewport(), Qt::LeftButton, {}, tl->spanRect(i).center().toPoint());
    };

    // A span of a drawn node selects that node itself, with no mark.
    w.showTab(tab);
    QVERIFY(scene->toggleExpanded("blocks"));
    QVERIFY(scene->node("blocks/W2"));
    const int w2 = find("blocks/W2", "matmul", Category::Compute);
    QVERIFY(w2 >= 0);
    click_span(w2);
    QCOMPARE(doc->selection(), QStringList{"blocks/W2"});
    QVERIFY(scene->node("blocks/W2")->isSelected());
    QVERIFY(!scene->node("blocks")->isSelected());
    QCOMPARE(scene->revealedIn(), QString());
    QCOMPARE(w.currentTab(), static_cast<QWidget*>(tab));

    // An optimizer update is recorded under its parameter's path; the click selects the node.
    const int update = find("blocks/W1/kernel", "adam_update", Category::Optimizer);
    QVERIFY(update >= 0);
    click_span(update);
    QCOMPARE(doc->selection(), QStringList{"blocks/W1"});
    QVERIFY(scene->node("blocks/W1")->isSelected());
    VERIFY_CONTAINS(tab->spanFacts()->text(), "optimizer update");
    listed.clear();
    for (int i = 0; i < list->count(); ++i) listed << list->item(i)->data(Qt::UserRole).toString();
    QCOMPARE(listed, (QStringList{"blocks/W1/kernel", "d_blocks/W1/kernel", "blocks/W1/kernel/mu", "blocks/W1/kernel/nu"}));
  }

  void graphSelectionHighlightsSpans() {
    TimelineView* tl = tab_->timeline();
    const auto spans = synthetic_.trace->spans();
    int expected = 0;
    for (const auto& s : spans) expected += s.node == "layer3" || s.node == "layer5";
    doc_->setSelection({"layer3", "layer5"});
    QCOMPARE(tl->highlightedCount(), expected);
    QCOMPARE(expected, 2 * kDevices * kSteps * kSpansPerStep / 10);
    doc_->setSelection({"dense_nowhere"});
    QCOMPARE(tl->highlightedCount(), 0);
    doc_->setSelection({});
    QCOMPARE(tl->highlightedCount(), 0);
    doc_->setSelection({"layer3"});
    QCOMPARE(tl->highlightedCount(), expected / 2);
    // Highlighted spans are drawn in full colour, the others dimmed: compare a layer3 pixel with a layer4 one.
    tl->zoomToStep(2);
    int l3 = -1, l4 = -1;
    for (int i = 0; i < int(spans.size()) && (l3 < 0 || l4 < 0); ++i) {
      const auto& s = spans[size_t(i)];
      if (s.step != 2 || s.device != 0 || s.category != Category::Compute) continue;
      if (s.node == "layer3" && l3 < 0) l3 = i;
      if (s.node == "layer4" && l4 < 0) l4 = i;
    }
    const QImage img = tl->grab().toImage();
    const QPointF c3 = tl->spanRect(l3).center(), c4 = tl->spanRect(l4).center();
    QCOMPARE(img.pixelColor(c3.toPoint()).saturation() > img.pixelColor(c4.toPoint()).saturation(), true);
  }

  void followsARealTrainingRunLive() {
    auto trace = std::make_shared<profiler::Trace>(profiler::Trace::Mode::Detailed, 20);
    liveTrace_ = trace;
    runtime::TrainOptions o;
    o.steps = 2;
    o.threads = 1;
    o.trace = trace;
    runtime::Trainer trainer(doc_->project(), o);
    const int devices = trainer.plan_info().devices;
    std::atomic<bool> done{false};
    std::string error;
    std::thread worker([&] {
      try {
        trainer.run();
      } catch (const std::exception& e) {
        error = e.what();
      }
      done = true;
    });
    tab_->followRun(trace, "run 1: deep-mlp-small", 2e11);
    QCOMPARE(tab_->baselineLabel(), QString("synthetic: 8 devices"));
    // The timer polls while the tab is visible: spans show up while the trainer is still going.
    QTRY_VERIFY_WITH_TIMEOUT(tab_->timeline()->spanCount() > 0 || done, 120000);
    const bool sawWhileRunning = tab_->timeline()->spanCount() > 0 && !done;
    QTRY_VERIFY_WITH_TIMEOUT(done.load(), 300000);
    worker.join();
    QVERIFY2(error.empty(), error.c_str());
    QVERIFY(sawWhileRunning);
    QVERIFY(tab_->isFollowing());
    tab_->runFinished();
    QVERIFY(!tab_->isFollowing());
    TimelineView* tl = tab_->timeline();
    QCOMPARE(tl->laneCount(), devices);
    int expected = 0;
    for (const auto& s : trace->spans()) expected += s.category != Category::Step;
    QCOMPARE(tl->spanCount(), expected);
    QCOMPARE(int(tl->steps().size()), 2);
    QCOMPARE(tab_->breakdown()->stepCount(), 2);
    QVERIFY(tab_->breakdown()->achievedFlops() > 0);
    VERIFY_CONTAINS(tab_->breakdown()->headline(), "MFU");
    qInfo("deep-mlp-small, 2 steps on 1 thread: %d spans, %s", tl->spanCount(), qPrintable(tab_->breakdown()->headline()));
    // Every layer of the graph has spans: the Dense layers and the ReLUs.
    const auto spans = trace->spans();
    QVERIFY(std::any_of(spans.begin(), spans.end(), [](const Span& s) { return s.node == "layers_3"; }));
  }

  void comparisonListsTheLayersOfBothRuns() {
    tab_->views()->setCurrentWidget(tab_->comparison());
    LayerTimeModel* m = tab_->comparison()->model();
    QVERIFY(m->rowOf("layer3") >= 0);    // the synthetic baseline's
    QVERIFY(m->rowOf("layers_0") >= 0);  // the training run's
    QVERIFY(m->rowOf("output_layer") >= 0);
    const int base = m->rowOf("layer3"), cur = m->rowOf("layers_0");
    // layer3: 8 devices x 25 spans per step in the baseline, none in the current run.
    double perStep = 0;
    for (const auto& s : synthetic_.trace->spans())
      if (s.node == "layer3") perStep += s.dur_us;
    perStep /= kSteps;
    QVERIFY(std::abs(m->data(m->index(base, LayerTimeModel::Baseline), LayerTimeModel::ValueRole).toDouble() - perStep) < 1e-6 * perStep);
    QVERIFY(std::isnan(m->data(m->index(base, LayerTimeModel::Current), LayerTimeModel::ValueRole).toDouble()));
    QCOMPARE(m->data(m->index(base, LayerTimeModel::Current)).toString(), QString("—"));
    QVERIFY(m->data(m->index(cur, LayerTimeModel::Current), LayerTimeModel::ValueRole).toDouble() > 0);
    QCOMPARE(tab_->comparison()->baselineChart()->stepCount(), kSteps);
    QCOMPARE(tab_->comparison()->currentChart()->stepCount(), 2);
    // The table is sorted by the current run's time, slowest first.
    QTableView* table = tab_->comparison()->table();
    const QModelIndex first = table->model()->index(0, LayerTimeModel::Current);
    const QModelIndex second = table->model()->index(1, LayerTimeModel::Current);
    QVERIFY(first.data(LayerTimeModel::ValueRole).toDouble() >= second.data(LayerTimeModel::ValueRole).toDouble());
  }

  void opensAndExportsTraceFiles() {
    // The run above's trace, as `shardlab-cli train --trace` writes it.
    QVERIFY(liveTrace_);
    const auto trace = liveTrace_;
    const QString saved = tmp_.filePath("run2.trace.json");
    trace->write_chrome_json(saved.toStdString());
    QSignalSpy messages(doc_, &ProjectDocument::message);
    QVERIFY(tab_->openTraceFile(saved));
    QCOMPARE(tab_->currentLabel(), QString("run2.trace.json"));
    QCOMPARE(tab_->baselineLabel(), QString("run 1: deep-mlp-small"));
    QVERIFY(!tab_->isFollowing());
    int drawn = 0;
    for (const auto& s : trace->spans()) drawn += s.category != Category::Step;
    QCOMPARE(tab_->timeline()->spanCount(), drawn);
    QCOMPARE(tab_->breakdown()->stepCount(), 2);  // derived from the spans
    QVERIFY(tab_->lastError().isEmpty());

    // Export round trip: the loaded spans re-serialised are the file it came from.
    const QString exported = tmp_.filePath("exported.json");
    QVERIFY(tab_->exportTrace(exported));
    QCOMPARE(readAll(exported), readAll(saved));
    const auto back = profiler::read_chrome_trace(exported.toStdString());
    QCOMPARE(back.spans.size(), trace->spans().size());

    // The followed run's own trace exports too.
    tab_->swapRuns();
    QCOMPARE(tab_->currentLabel(), QString("run 1: deep-mlp-small"));
    const QString live = tmp_.filePath("live.json");
    QVERIFY(tab_->exportTrace(live));
    QVERIFY(tab_->openTraceFile(live));
    QCOMPARE(tab_->baselineLabel(), QString("run 1: deep-mlp-small"));
    QCOMPARE(tab_->comparison()->model()->rowOf("layers_0") >= 0, true);
    const int row = tab_->comparison()->model()->rowOf("layers_0");
    // The same run on both sides: no difference.
    QCOMPARE(tab_->comparison()->model()->data(tab_->comparison()->model()->index(row, LayerTimeModel::Difference),
                                               LayerTimeModel::ValueRole).toDouble(), 0.0);

    // An export that cannot be written says so.
    QVERIFY(!tab_->exportTrace(tmp_.filePath("no/such/dir/x.json")));
    VERIFY_CONTAINS(tab_->lastError(), "no/such/dir/x.json");
  }

  // A trace recorded on the CUDA backend names its devices "GPU n" in the lanes, the device list,
  // the chart's headline and the span details; a CPU trace opened after it goes back to "CPU n".
  void aGpuTraceNamesItsDevicesGpus() {
    QVERIFY(liveTrace_);
    const QString cpuFile = tmp_.filePath("cpu.trace.json"), gpuFile = tmp_.filePath("gpu.trace.json");
    liveTrace_->write_chrome_json(cpuFile.toStdString());
    const auto gpu = profiler::make_trace(profiler::read_chrome_trace(cpuFile.toStdString()));
    QCOMPARE(gpu->device_label(), std::string("CPU"));
    gpu->set_device_label("GPU");
    gpu->write_chrome_json(gpuFile.toStdString());
    QCOMPARE(profiler::make_trace(profiler::read_chrome_trace(gpuFile.toStdString()))->device_label(), std::string("GPU"));

    QVERIFY(tab_->openTraceFile(gpuFile));
    QCOMPARE(tab_->deviceLabel(), QString("GPU"));
    QCOMPARE(tab_->timeline()->laneName(0), QString("GPU 0"));
    QCOMPARE(tab_->deviceCombo()->itemText(1), QString("GPU 0"));
    tab_->deviceCombo()->setCurrentIndex(1);
    VERIFY_CONTAINS(tab_->breakdown()->headline(), "GPU 0");
    tab_->deviceCombo()->setCurrentIndex(0);

    QVERIFY(tab_->openTraceFile(cpuFile));
    QCOMPARE(tab_->deviceLabel(), QString("CPU"));
    QCOMPARE(tab_->timeline()->laneName(0), QString("CPU 0"));
    QCOMPARE(tab_->deviceCombo()->itemText(1), QString("CPU 0"));
  }

  void badTraceFilesAreRefused() {
    const QString shown = tab_->currentLabel();
    const QString bad = tmp_.filePath("bad.json");
    {
      QFile f(bad);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(R"({"traceEvents": [{"name": "matmul", "cat": "compute", "ph": "X", "ts": 1, "pid": 0, "tid": 1}]})");
    }
    QSignalSpy messages(doc_, &ProjectDocument::message);
    QVERIFY(!tab_->openTraceFile(bad));
    VERIFY_CONTAINS(tab_->lastError(), bad);
    VERIFY_CONTAINS(tab_->lastError(), "dur");
    QCOMPARE(messages.count(), 1);
    QCOMPARE(messages.at(0).at(0).toString(), QString("error"));
    QCOMPARE(tab_->currentLabel(), shown);  // nothing replaced
    QVERIFY(!tab_->openTraceFile(tmp_.filePath("missing.json")));
    VERIFY_CONTAINS(tab_->lastError(), "missing.json");
    // A light trace has no spans to show.
    const QString light = tmp_.filePath("light.json");
    profiler::Trace(profiler::Trace::Mode::Light).write_chrome_json(light.toStdString());
    QVERIFY(!tab_->openTraceFile(light));
    VERIFY_CONTAINS(tab_->lastError(), "no spans");
  }

  void screenshot() {
    tab_->followRun(synthetic_.trace, "synthetic: 8 devices", 8e11);
    tab_->runFinished();
    doc_->setSelection({"layer3"});
    tab_->timeline()->zoomToStep(9);
    tab_->timeline()->zoomBy(2.5, TimelineView::kLabelWidth + 10);
    tab_->views()->setCurrentIndex(0);
    QApplication::processEvents();
    QVERIFY(tab_->grab().save(screenshotDir() + "/trace.png"));
    tab_->views()->setCurrentWidget(tab_->comparison());
    QApplication::processEvents();
    QVERIFY(tab_->grab().save(screenshotDir() + "/trace-compare.png"));
  }
};

QTEST_MAIN(TestTraceTab)
#include "test_trace_tab.moc"
