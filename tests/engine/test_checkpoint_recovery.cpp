// Replacing a committed step keeps a committed copy at every moment, and what a killed writer leaves
// (recovery.h's temporaries) is listed, explained by the loader, and put right by recover().
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/listing.h"
#include "engine/checkpoint/recovery.h"
#include "engine/util/error.h"

using namespace shardlab;
namespace fs = std::filesystem;

namespace {

// A committed step whose one array holds `value`.
fs::path save_step(const fs::path& root, int64_t step, float value) {
  Tensor t({2, 3});
  for (float& x : t.data) x = value;
  return checkpoint::save(root, step, {{"params/w", t}}, nlohmann::ordered_json::object());
}

float value_of(const fs::path& dir) { return checkpoint::load(dir).arrays.at("params/w").data[0]; }

fs::path renamed(const fs::path& dir, const std::string& suffix) {
  fs::path p = dir;
  p += suffix;
  fs::rename(dir, p);
  return p;
}

QString load_error(const fs::path& dir) {
  try {
    checkpoint::load(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

class TestCheckpointRecovery : public QObject {
  Q_OBJECT
 private slots:

  void savingAnExistingStepReplacesItAndLeavesNoTemporary() {
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    save_step(root, 2, 1.0f);
    const fs::path step2 = save_step(root, 2, 7.0f);
    QCOMPARE(value_of(step2), 7.0f);
    QVERIFY(checkpoint::leftovers(root).empty());
    QCOMPARE(int(checkpoint::committed(root).size()), 1);
  }

  // The state a writer killed between "old step moved aside" and "new step renamed in" leaves
  // where directories cannot be swapped: listed with the reason, explained by load(), put back.
  void aDisplacedStepIsListedExplainedAndRestored() {
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    save_step(root, 2, 2.0f);
    const fs::path step4 = save_step(root, 4, 4.0f);
    const fs::path aside = renamed(step4, ".tmp-old-4242");
    save_step(root, 4, 5.0f);  // a later save's half-built replacement, never committed under its name
    const fs::path building = renamed(step4, ".tmp-4242");

    const auto listed = checkpoint::list(root);
    QCOMPARE(int(listed.size()), 2);
    QCOMPARE(listed.back().step, int64_t(4));
    QVERIFY2(QString::fromStdString(listed.back().error).contains("interrupted"), listed.back().error.c_str());
    const QString why = load_error(step4);
    QVERIFY2(why.contains(QString::fromStdString(aside.string())) && why.contains("puts it back"), qPrintable(why));

    const std::vector<std::string> restored = checkpoint::recover(root);
    QCOMPARE(int(restored.size()), 1);
    QVERIFY2(QString::fromStdString(restored[0]).contains("restored step 4"), restored[0].c_str());
    QCOMPARE(value_of(step4), 4.0f);  // the committed one, not the half-built replacement
    QVERIFY(!fs::exists(aside));
    QVERIFY(!fs::exists(building));
    QVERIFY(checkpoint::leftovers(root).empty());
  }

  // Temporaries whose step is committed, deletions in progress and half-written files are stale:
  // removed, never restored, even when they hold a COMMITTED marker; a displaced step that nothing
  // committed replaces is restored.
  void staleTemporariesAreRemovedNotRestored() {
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    const fs::path step2 = save_step(root, 2, 2.0f);
    save_step(root, 6, 6.0f);
    const fs::path aside8 = renamed(save_step(root, 8, 8.0f), ".tmp-old-77");  // restorable: no step 8
    const fs::path old2 = renamed(save_step(root, 3, 3.0f), ".tmp-del-77");  // a deletion in progress
    fs::copy(step2, fs::path(step2.string() + ".tmp-old-78"), fs::copy_options::recursive);  // step 2 is committed
    fs::create_directory(root / "step_000010.tmp-79");  // a save killed early
    std::ofstream(root / "run.json.saving-79-0") << "{\"half";

    const std::vector<std::string> restored = checkpoint::recover(root);
    QCOMPARE(int(restored.size()), 1);  // step 8 only
    QCOMPARE(value_of(checkpoint::step_dir(root, 8)), 8.0f);
    QVERIFY(!fs::exists(aside8));
    QVERIFY(!fs::exists(old2));
    QVERIFY(!fs::exists(checkpoint::step_dir(root, 3)));
    QVERIFY(checkpoint::leftovers(root).empty());
    QCOMPARE(value_of(step2), 2.0f);
    std::vector<int64_t> steps;
    for (const auto& [s, d] : checkpoint::committed(root)) steps.push_back(s);
    QCOMPARE(steps, (std::vector<int64_t>{2, 6, 8}));
  }

  // prune() clears leftovers as the run's start does, and never deletes the newest step.
  void pruneKeepsTheNewestAndClearsLeftovers() {
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    for (int s = 1; s <= 4; ++s) save_step(root, s, float(s));
    fs::create_directory(root / "step_000005.tmp-12");
    checkpoint::prune(root, 2);
    std::vector<int64_t> steps;
    for (const auto& [s, d] : checkpoint::committed(root)) steps.push_back(s);
    QCOMPARE(steps, (std::vector<int64_t>{3, 4}));
    QVERIFY(checkpoint::leftovers(root).empty());
  }
};

QTEST_GUILESS_MAIN(TestCheckpointRecovery)
#include "test_checkpoint_recovery.moc"
