// Checkpoints of blocks, as several processes save them (engine/checkpoint/blocks.h): block names,
// the tiling check, whole arrays assembled from blocks, a region cut across blocks, partial reads
// that read (and check) only the blocks wanted, and a step directory written in two phases by two
// "processes" that load() reads as whole arrays and load_blocks() reads in part. The runs over
// real processes are tests/mpi/test_mpi_runs.cpp's.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>

#include "engine/checkpoint/blocks.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/export.h"
#include "engine/checkpoint/sharded.h"
#include "tests/engine/test_support.h"
#include "tests/engine/two_process_checkpoint.h"

using namespace shardlab;
using namespace shardlab::checkpoint;
using namespace shardlab::testing;
namespace fs = std::filesystem;

namespace {

// The error `call` throws contains `text`; else the test fails showing the error it got.
#define EXPECT_ERROR(call, text)                    \
  do {                                              \
    const QString got = error_of([&] { call; });    \
    QVERIFY2(got.contains(text), qPrintable(got));  \
  } while (0)

bool equal(const Tensor& a, const Tensor& b) { return a.shape == b.shape && a.data == b.data; }

}  // namespace

class TestCheckpointBlocks : public QObject {
  Q_OBJECT

 private slots:
  void blockNamesRoundTrip() {
    QCOMPARE(QString::fromStdString(block_name("params/dense/kernel", {0, 256})), QString("params/dense/kernel@0,256"));
    BlockRef r;
    QVERIFY(parse_block_name("opt_state/mu/params/x@12,0,3", r));
    QCOMPARE(QString::fromStdString(r.array), QString("opt_state/mu/params/x"));
    QCOMPARE(r.start, (Shape{12, 0, 3}));
    QVERIFY(parse_block_name("scalar@", r));
    QVERIFY(r.start.empty());
    for (const char* bad : {"params/x", "@1", "x@1,", "x@a", "x@1,,2", "x@-1"}) QVERIFY2(!parse_block_name(bad, r), bad);
  }

  void theTilingCheckNamesTheFault() {
    const std::map<std::string, Shape> shapes{{"w", {6, 8}}};
    std::vector<std::pair<std::string, Shape>> ok{{"w@0,0", {3, 5}}, {"w@0,5", {3, 3}}, {"w@3,0", {3, 5}}, {"w@3,5", {3, 3}}};
    check_tiling(shapes, ok, "ck");
    auto gap = ok;
    gap.pop_back();
    EXPECT_ERROR(check_tiling(shapes, gap, "ck"), "array 'w' (6, 8) has 9 of its 48 elements in no block");
    auto overlap = ok;
    overlap[1] = {"w@0,4", {3, 4}};
    EXPECT_ERROR(check_tiling(shapes, overlap, "ck"), "'w@0,4' overlaps w@0,0");
    auto outside = ok;
    outside[3] = {"w@3,5", {3, 4}};
    EXPECT_ERROR(check_tiling(shapes, outside, "ck"), "reaches past its array's end");
    auto stranger = ok;
    stranger.push_back({"v@0", {2}});
    EXPECT_ERROR(check_tiling(shapes, stranger, "ck"), "belongs to 'v', which checkpoint.json's blocks do not list");
    EXPECT_ERROR(check_tiling(shapes, {{"w", {6, 8}}}, "ck"), "is not a block");
  }

  void blocksAssembleIntoTheWholeArrayInTheirDtype() {
    const Tensor w = counting(6, 8);
    SafetensorsFile f;
    for (const auto& [n, t] : grid("w", w)) f.tensors.push_back(from_tensor(n, t, StoredDType::BF16));
    const SafetensorsFile whole = assemble_blocks(f, {{"w", w.shape}}, "ck");
    QCOMPARE(whole.tensors.size(), size_t(1));
    QCOMPARE(whole.tensors[0].dtype, StoredDType::BF16);
    QVERIFY(whole.tensors[0].bytes == from_tensor("w", w, StoredDType::BF16).bytes);
    // An array whose blocks disagree on the dtype is refused, naming the block.
    f.tensors[2] = from_tensor(f.tensors[2].name, slice(w, 3, 0, 3, 5));
    EXPECT_ERROR(assemble_blocks(f, {{"w", w.shape}}, "ck"), "block 'w@3,0' is F32");
  }

  void aRegionIsCutAcrossBlocks() {
    const Tensor w = counting(6, 8);
    std::vector<StoredTensor> stored;
    for (const auto& [n, t] : grid("w", w)) stored.push_back(from_tensor(n, t));
    std::vector<const StoredTensor*> blocks;
    for (const StoredTensor& s : stored) blocks.push_back(&s);
    // Rows 2-4, columns 4-7: a part of every block.
    QVERIFY(equal(region_from_blocks("w", blocks, {2, 4}, {3, 4}), slice(w, 2, 4, 3, 4)));
    QVERIFY(equal(region_from_blocks("w", blocks, {0, 0}, {6, 8}), w));
    // Without the lower right block the region is not covered: the error names the array.
    blocks.pop_back();
    EXPECT_ERROR(region_from_blocks("w", blocks, {2, 4}, {3, 4}), "array 'w': the checkpoint's blocks cover 6 of the 12");
  }

  void aPartialReadChecksOnlyWhatItReads() {
    QTemporaryDir tmp;
    const fs::path file = fs::path(tmp.path().toStdString()) / "two.safetensors";
    SafetensorsFile f;
    f.tensors.push_back(from_tensor("a", counting(2, 2)));
    f.tensors.push_back(from_tensor("b", counting(2, 3)));
    add_checksums(f);
    write_safetensors(file, f);
    // Corrupt b's last byte: a read of a alone does not see it; a read of b does.
    {
      std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
      io.seekp(-1, std::ios::end);
      io.put('\x7f');
    }
    const SafetensorsFile only_a = read_safetensors(file, [](const std::string& n, const Shape&) { return n == "a"; });
    QCOMPARE(only_a.tensors.size(), size_t(2));
    QVERIFY(!only_a.tensors[0].skipped);
    QCOMPARE(only_a.tensors[0].bytes.size(), size_t(16));
    QVERIFY(only_a.tensors[1].skipped);
    QVERIFY(only_a.tensors[1].bytes.empty());
    QCOMPARE(only_a.tensors[1].shape, (Shape{2, 3}));
    EXPECT_ERROR(read_safetensors(file, [](const std::string& n, const Shape&) { return n == "b"; }), "tensor 'b': CRC32C mismatch");
  }

  void aStepOfBlocksLoadsWholeOrInPart() {
    QTemporaryDir tmp;
    const fs::path root = tmp.path().toStdString();
    const Tensor w = counting(6, 8);
    Tensor b({8});
    for (int i = 0; i < 8; ++i) b.data[size_t(i)] = float(i) - 3.25f;
    const fs::path dir = write_two_process_step(root, w, b, 7);

    // load(): whole arrays, named as a checkpoint of whole arrays names them.
    const Loaded whole = load(dir);
    QCOMPARE(whole.step, int64_t(7));
    QCOMPARE(whole.arrays.size(), size_t(2));
    QVERIFY(equal(whole.arrays.at("params/w"), w));
    QVERIFY(equal(whole.arrays.at("params/b"), b));
    const CheckedModel checked = read_checked(dir);
    QCOMPARE(QString::fromStdString(checked.where.file_of.at("params/w")), QString("model-00001-of-00002.safetensors"));
    QCOMPARE(QString::fromStdString(checked.where.file_of.at("params/b")), QString("model-00002-of-00002.safetensors"));
    QCOMPARE(checked.blocks.at("params/w").blocks, 4);  // what inspect shows: 4 blocks in 2 files
    QCOMPARE(checked.blocks.at("params/w").files, 2);
    QCOMPARE(checked.blocks.at("params/b").blocks, 1);

    // load_blocks(): only the blocks wanted are read; every array's dtype is known all the same.
    const LoadedBlocks part = load_blocks(dir, [](const std::string& array, const Shape& start, const Shape&) {
      return array == "params/w" && start[0] == 3;
    });
    QCOMPARE(part.blocks.size(), size_t(2));
    for (const StoredTensor& t : part.blocks) QVERIFY2(t.name.rfind("params/w@3,", 0) == 0, t.name.c_str());
    QCOMPARE(part.dtypes.size(), size_t(2));
    QCOMPARE(part.arrays.size(), size_t(2));
    QCOMPARE(part.arrays[0].second, w.shape);
  }

  // A streamed write is the ordinary write's file, byte for byte, with each tensor made on demand
  // (twice: once for its checksum, once for its bytes); a tensor made unlike its entry is an error
  // that leaves no file.
  void aStreamedWriteIsTheSameFile() {
    QTemporaryDir tmp;
    const fs::path dir = tmp.path().toStdString();
    SafetensorsFile f;
    f.tensors = {from_tensor("z", counting(2, 3)), from_tensor("a", counting(4, 1), StoredDType::BF16), from_tensor("m", counting(1, 5))};
    f.metadata = {{"format", "shardlab"}, {"step", "7"}};
    SafetensorsFile checked = f;
    add_checksums(checked);
    write_safetensors(dir / "whole.safetensors", checked);
    std::vector<TensorEntry> entries;
    for (const StoredTensor& t : f.tensors) entries.push_back({t.name, t.dtype, t.shape});
    int made = 0;
    write_safetensors_streamed(dir / "streamed.safetensors", entries, f.metadata, true, [&](size_t i) {
      ++made;
      return f.tensors[i];
    });
    QCOMPARE(made, 6);
    auto bytes = [](const fs::path& p) {
      std::ifstream in(p, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    QVERIFY(bytes(dir / "streamed.safetensors") == bytes(dir / "whole.safetensors"));
    entries[1].shape = {2, 2};
    EXPECT_ERROR(write_safetensors_streamed(dir / "bad.safetensors", entries, f.metadata, false, [&](size_t i) { return f.tensors[i]; }),
                 "tensor 'a' was made as 'a' BF16 [4, 1], not BF16 [2, 2]");
    QVERIFY(!fs::exists(dir / "bad.safetensors"));
  }

  // Exporting a step of blocks assembles each parameter whole, one at a time: the file holds the
  // whole arrays (under their names without "params/").
  void anExportOfBlocksWritesWholeArrays() {
    QTemporaryDir tmp;
    const fs::path root = tmp.path().toStdString();
    const Tensor w = counting(6, 8), b = Tensor({8}, counting(1, 8).data);
    const fs::path dir = write_two_process_step(root, w, b, 5);
    VERIFY_CONTAINS(QString::fromStdString(export_checkpoint(dir, "safetensors", root / "params.safetensors")), "array by array");
    const SafetensorsFile out = read_safetensors(root / "params.safetensors");
    QCOMPARE(out.tensors.size(), size_t(2));
    QVERIFY(equal(to_tensor(*out.find("w")), w));
    QVERIFY(equal(to_tensor(*out.find("b")), b));
    QCOMPARE(out.metadata.at("step"), std::string("5"));
    // In bfloat16, as asked.
    export_checkpoint(dir, "safetensors", root / "params16.safetensors", DType::BF16);
    QCOMPARE(read_safetensors(root / "params16.safetensors").find("w")->dtype, StoredDType::BF16);
  }

  // inspect's summary of a step of blocks: each array with its dtype, shape, bytes, blocks and the
  // files they are in, read (and checked) one array at a time.
  void aSummaryListsEachArraysBlocks() {
    QTemporaryDir tmp;
    const fs::path root = tmp.path().toStdString();
    const Tensor w = counting(6, 8), b = Tensor({8}, counting(1, 8).data);
    const CheckpointSummary s = summarize(write_two_process_step(root, w, b, 2));
    QVERIFY(s.blocks);
    QCOMPARE(s.step, int64_t(2));
    QCOMPARE(s.where.files.size(), size_t(2));
    QCOMPARE(s.arrays.size(), size_t(2));
    QCOMPARE(s.arrays[0].name, std::string("params/w"));
    QCOMPARE(s.arrays[0].shape, w.shape);
    QCOMPARE(s.arrays[0].bytes, double(w.size() * 4));
    QCOMPARE(s.arrays[0].blocks, 4);
    QCOMPARE(s.arrays[0].files, 2);
    QCOMPARE(s.arrays[1].blocks, 1);
    QCOMPARE(s.arrays[1].files, 1);
  }

  void aStepMissingABlockOrMislabelledIsRefused() {
    QTemporaryDir tmp;
    const fs::path root = tmp.path().toStdString();
    const Tensor w = counting(6, 8);
    const Tensor b({8}, 1.0f);
    // Blocks listed with a smaller array than they tile: the tiling check names the block.
    {
      nlohmann::ordered_json meta = blocks_meta(w);
      meta["blocks"]["params/w"] = Shape{6, 6};
      const fs::path t = begin_save(root, 3, meta);
      std::vector<std::pair<std::string, Tensor>> all = grid("params/w", w);
      all.push_back({block_name("params/b", {0}), b});
      std::vector<std::pair<std::string, std::string>> map;
      const std::string file = write_shard(t, tensor_file(all, 3), 1, 1);
      for (const auto& [n, x] : all) map.push_back({n, file});
      write_index(t, map, uint64_t(w.size() + b.size()) * 4);
      const fs::path dir = commit_save(root, 3, t, meta);
      EXPECT_ERROR(load(dir), "block 'params/w@0,5' of shape (3, 3) reaches past its array's end, (6, 6)");
    }
    // "blocks" in a version 1 file: the schema refuses it.
    {
      nlohmann::ordered_json meta = blocks_meta(w);
      meta["version"] = 1;
      EXPECT_ERROR(begin_save(root, 4, meta), "blocks: is a version 2 field");
    }
  }
};

QTEST_GUILESS_MAIN(TestCheckpointBlocks)
#include "test_checkpoint_blocks.moc"
