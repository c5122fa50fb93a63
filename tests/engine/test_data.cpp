// The data module: IDX and npy readers, the data spec, dataset loading and the batch loader.
#include <QTemporaryDir>
#include <QtTest>
#include <limits>

#include <sys/resource.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/data/batch_loader.h"
#include "engine/data/data_probe.h"
#include "engine/data/data_spec.h"
#include "engine/data/dataset.h"
#include "engine/data/idx.h"
#include "engine/data/npy.h"
#include "engine/data/npz.h"
#include "engine/util/error.h"
#include "tests/engine/test_support.h"
#include "tests/engine/zip_writer.h"

using namespace shardlab;
using namespace shardlab::data;
namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

using shardlab::testing::error_of;

namespace {

void write_file(const fs::path& p, const Bytes& b) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

void write_gz(const fs::path& p, const Bytes& b) {
  gzFile f = gzopen(p.c_str(), "wb");
  QVERIFY(f);
  QCOMPARE(gzwrite(f, b.data(), unsigned(b.size())), int(b.size()));
  gzclose(f);
}

Bytes idx_bytes(uint8_t type, const std::vector<uint32_t>& dims, const Bytes& payload) {
  Bytes b = {0, 0, type, uint8_t(dims.size())};
  for (uint32_t d : dims) {
    b.push_back(uint8_t(d >> 24)); b.push_back(uint8_t(d >> 16)); b.push_back(uint8_t(d >> 8)); b.push_back(uint8_t(d));
  }
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

// A version 1.0 (or 2.0) npy file with the given header dict and raw little-endian payload.
Bytes npy_bytes(const std::string& dict, const Bytes& payload, int major = 1) {
  std::string header = dict;
  const size_t pre = major == 1 ? 10 : 12;
  while ((pre + header.size() + 1) % 64) header.push_back(' ');
  header.push_back('\n');
  Bytes b = {0x93, 'N', 'U', 'M', 'P', 'Y', uint8_t(major), 0};
  b.push_back(uint8_t(header.size()));
  b.push_back(uint8_t(header.size() >> 8));
  if (major != 1) { b.push_back(0); b.push_back(0); }
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

template <class T>
Bytes le_bytes(const std::vector<T>& v) {  // the test machines are little-endian, as numpy's '<' is
  Bytes b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::string npy_dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
}

// N examples whose features ([N, 2]) and targets ([N]) both hold the example's index, so batches reveal order.
Dataset indexed_dataset(int64_t n) {
  Dataset ds;
  ds.features = Tensor(Shape{n, 2});
  ds.targets = Tensor(Shape{n});
  for (int64_t i = 0; i < n; ++i) {
    ds.features.data[size_t(2 * i)] = ds.features.data[size_t(2 * i + 1)] = float(i);
    ds.targets.data[size_t(i)] = float(i);
  }
  ds.integer_labels = true;
  ds.num_classes = n;
  return ds;
}

std::vector<int64_t> ids(const Batch& b) {
  std::vector<int64_t> out;
  for (float v : b.targets.data) out.push_back(int64_t(v));
  return out;
}

DataSpec spec_of(const char* json) { return parse_data_spec(nlohmann::ordered_json::parse(json), "p.json: data"); }

}  // namespace

class TestData : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  fs::path dir() const { return fs::path(tmp_.path().toStdString()); }

 private slots:
  void initTestCase() { QVERIFY(tmp_.isValid()); }

  // ---- IDX ----

  void idxPlainFileKeepsShapeAndValues() {
    Bytes payload;
    for (int i = 0; i < 2 * 3 * 4; ++i) payload.push_back(uint8_t(i * 10));
    write_file(dir() / "plain.idx", idx_bytes(0x08, {2, 3, 4}, payload));
    const Tensor t = load_idx(dir() / "plain.idx");
    QCOMPARE(t.shape, (Shape{2, 3, 4}));
    for (int i = 0; i < 24; ++i) QCOMPARE(t.data[size_t(i)], float(uint8_t(i * 10)));
  }

  void idxGzipFileReadsLikePlain() {
    Bytes payload;
    for (int i = 0; i < 5 * 7; ++i) payload.push_back(uint8_t(255 - i));
    const Bytes file = idx_bytes(0x08, {5, 7}, payload);
    write_file(dir() / "same.idx", file);
    write_gz(dir() / "same.idx.gz", file);
    const Tensor a = load_idx(dir() / "same.idx"), b = load_idx(dir() / "same.idx.gz");
    QCOMPARE(b.shape, (Shape{5, 7}));
    QCOMPARE(a.shape, b.shape);
    QCOMPARE(a.data, b.data);
    QCOMPARE(b.data[0], 255.0f);
  }

  void idxReadsBigEndianWideTypes() {
    write_file(dir() / "i16.idx", idx_bytes(0x0B, {2}, {0xFF, 0xFE, 0x01, 0x00}));  // -2, 256
    QCOMPARE(load_idx(dir() / "i16.idx").data, (std::vector<float>{-2, 256}));
    write_file(dir() / "i32.idx", idx_bytes(0x0C, {1}, {0x00, 0x01, 0x00, 0x00}));  // 65536
    QCOMPARE(load_idx(dir() / "i32.idx").data, (std::vector<float>{65536}));
    write_file(dir() / "f32.idx", idx_bytes(0x0D, {1}, {0x3F, 0xC0, 0x00, 0x00}));  // 1.5
    QCOMPARE(load_idx(dir() / "f32.idx").data, (std::vector<float>{1.5f}));
  }

  void idxIgnoresTrailingBytes() {
    write_file(dir() / "trail.idx", idx_bytes(0x08, {3}, {1, 2, 3, 99, 99}));
    QCOMPARE(load_idx(dir() / "trail.idx").data, (std::vector<float>{1, 2, 3}));
  }

  void idxMissingFileNamesPath() {
    const QString msg = error_of([&] { load_idx(dir() / "nope-images.idx.gz"); });
    VERIFY_CONTAINS(msg, "nope-images.idx.gz");
    VERIFY_CONTAINS(msg, "no such file");
  }

  void idxBadMagicIsReported() {
    write_file(dir() / "magic.idx", {0x12, 0x34, 0x08, 0x01, 0, 0, 0, 1, 7});
    const QString msg = error_of([&] { load_idx(dir() / "magic.idx"); });
    VERIFY_CONTAINS(msg, "magic.idx");
    VERIFY_CONTAINS(msg, "bad magic");
  }

  void idxUnsupportedTypeIsReported() {
    write_file(dir() / "type.idx", idx_bytes(0x07, {1}, {0}));
    const QString msg = error_of([&] { load_idx(dir() / "type.idx"); });
    VERIFY_CONTAINS(msg, "type.idx");
    VERIFY_CONTAINS(msg, "0x07");
  }

  void idxTruncatedHeaderIsReported() {
    Bytes b = idx_bytes(0x08, {10, 28, 28}, {});
    b.resize(9);  // rank 3 needs 16 header bytes
    write_file(dir() / "short-header.idx", b);
    const QString msg = error_of([&] { load_idx(dir() / "short-header.idx"); });
    VERIFY_CONTAINS(msg, "short-header.idx");
    VERIFY_CONTAINS(msg, "truncated IDX header");
    VERIFY_CONTAINS(msg, "expected 16 bytes");
    VERIFY_CONTAINS(msg, "got 9");
  }

  void idxTruncatedDataSaysExpectedAndGot() {
    write_gz(dir() / "short-data.idx.gz", idx_bytes(0x08, {2, 28, 28}, Bytes(1000, 1)));
    const QString msg = error_of([&] { load_idx(dir() / "short-data.idx.gz"); });
    VERIFY_CONTAINS(msg, "short-data.idx.gz");
    VERIFY_CONTAINS(msg, "truncated IDX data");
    VERIFY_CONTAINS(msg, "expected 1568 bytes");
    VERIFY_CONTAINS(msg, "got 1000");
  }

  void idxCutGzipStreamIsReported() {
    Bytes payload(4000);
    for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(i * 7919 >> 3);
    write_gz(dir() / "cut.idx.gz", idx_bytes(0x08, {4000}, payload));
    const auto size = fs::file_size(dir() / "cut.idx.gz");
    fs::resize_file(dir() / "cut.idx.gz", size / 2);
    const QString msg = error_of([&] { load_idx(dir() / "cut.idx.gz"); });
    VERIFY_CONTAINS(msg, "cut.idx.gz");
    QVERIFY2(msg.contains("gzip") || msg.contains("truncated"), qPrintable(msg));
  }

  // ---- npy ----

  void npyReadsFloat32() {
    write_file(dir() / "f4.npy", npy_bytes(npy_dict("<f4", "(2, 3)"), le_bytes<float>({1, 2, 3, 4, 5, 6.5f})));
    const Tensor t = load_npy(dir() / "f4.npy");
    QCOMPARE(t.shape, (Shape{2, 3}));
    QCOMPARE(t.data, (std::vector<float>{1, 2, 3, 4, 5, 6.5f}));
  }

  void npyReadsFloat64VersionTwoHeader() {
    write_file(dir() / "f8.npy", npy_bytes(npy_dict("<f8", "(3,)"), le_bytes<double>({0.25, -1, 1e10}), 2));
    const Tensor t = load_npy(dir() / "f8.npy");
    QCOMPARE(t.shape, (Shape{3}));
    QCOMPARE(t.data, (std::vector<float>{0.25f, -1.0f, 1e10f}));
  }

  void npyReadsInt32() {
    write_file(dir() / "i4.npy", npy_bytes(npy_dict("<i4", "(4,)"), le_bytes<int32_t>({0, -7, 9, 123456})));
    QCOMPARE(load_npy(dir() / "i4.npy").data, (std::vector<float>{0, -7, 9, 123456}));
  }

  void npyReadsUInt8() {
    write_file(dir() / "u1.npy", npy_bytes(npy_dict("|u1", "(2, 2)"), {0, 1, 128, 255}));
    const Tensor t = load_npy(dir() / "u1.npy");
    QCOMPARE(t.shape, (Shape{2, 2}));
    QCOMPARE(t.data, (std::vector<float>{0, 1, 128, 255}));
  }

  void npyReadsFloat16() {
    write_file(dir() / "f2.npy", npy_bytes(npy_dict("<f2", "(3,)"), le_bytes<uint16_t>({0x3C00, 0xC000, 0x3555})));
    const Tensor t = load_npy(dir() / "f2.npy");
    QCOMPARE(t.data[0], 1.0f);
    QCOMPARE(t.data[1], -2.0f);
    QVERIFY(std::abs(t.data[2] - 1.0f / 3.0f) < 1e-3f);
  }

  void npyDoubleReaderKeepsPrecision() {
    write_file(dir() / "d.npy", npy_bytes(npy_dict("<f8", "(1,)"), le_bytes<double>({0.1})));
    QCOMPARE(load_npy_double(dir() / "d.npy").data[0], 0.1);
  }

  void npySaveLoadRoundTrip() {
    Tensor t(Shape{3, 2, 2});
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = float(i) * 0.5f - 2.0f;
    save_npy(dir() / "rt.npy", t);
    QCOMPARE(fs::file_size(dir() / "rt.npy") % 4, uintmax_t(0));
    const NpyHeader h = read_npy_header(dir() / "rt.npy");
    QCOMPARE(h.descr, std::string("f4"));
    QCOMPARE(h.data_offset % 64, int64_t(0));  // numpy aligns the data
    const Tensor back = load_npy(dir() / "rt.npy");
    QCOMPARE(back.shape, t.shape);
    QCOMPARE(back.data, t.data);

    Tensor vec(Shape{5}, 3.0f);
    save_npy(dir() / "vec.npy", vec);
    QCOMPARE(load_npy(dir() / "vec.npy").shape, (Shape{5}));
  }

  void npyNotMagicIsReported() {
    write_file(dir() / "text.npy", {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'});
    const QString msg = error_of([&] { load_npy(dir() / "text.npy"); });
    VERIFY_CONTAINS(msg, "text.npy");
    VERIFY_CONTAINS(msg, "not an npy file");
  }

  void npyTruncatedDataSaysExpectedAndGot() {
    write_file(dir() / "cut.npy", npy_bytes(npy_dict("<f4", "(10, 10)"), le_bytes<float>(std::vector<float>(30, 1))));
    const QString msg = error_of([&] { load_npy(dir() / "cut.npy"); });
    VERIFY_CONTAINS(msg, "cut.npy");
    VERIFY_CONTAINS(msg, "truncated npy data");
    VERIFY_CONTAINS(msg, "expected 400 bytes");
    VERIFY_CONTAINS(msg, "got 120");
  }

  void npyCorruptHeaderIsReported() {
    write_file(dir() / "hdr.npy", npy_bytes("{'descr': '<f4', 'shape': (2,), }", le_bytes<float>({1, 2})));
    QString msg = error_of([&] { load_npy(dir() / "hdr.npy"); });
    VERIFY_CONTAINS(msg, "hdr.npy");
    VERIFY_CONTAINS(msg, "bad npy header");
    VERIFY_CONTAINS(msg, "fortran_order");

    Bytes b = npy_bytes(npy_dict("<f4", "(2,)"), {});
    b.resize(20);  // header length says more than the file has
    write_file(dir() / "hdr2.npy", b);
    msg = error_of([&] { load_npy(dir() / "hdr2.npy"); });
    VERIFY_CONTAINS(msg, "hdr2.npy");
    VERIFY_CONTAINS(msg, "bad npy header");
  }

  void npyUnsupportedDtypeIsReported() {
    write_file(dir() / "c8.npy", npy_bytes(npy_dict("<c8", "(1,)"), Bytes(8, 0)));
    const QString msg = error_of([&] { load_npy(dir() / "c8.npy"); });
    VERIFY_CONTAINS(msg, "c8.npy");
    VERIFY_CONTAINS(msg, "unsupported dtype '<c8'");
  }

  void npyFortranOrderIsRejected() {
    write_file(dir() / "fort.npy", npy_bytes(npy_dict("<f4", "(2, 2)", true), le_bytes<float>({1, 2, 3, 4})));
    const QString msg = error_of([&] { load_npy(dir() / "fort.npy"); });
    VERIFY_CONTAINS(msg, "fort.npy");
    VERIFY_CONTAINS(msg, "fortran_order");
  }

  // Limits, checked while the header is read; values from the file are quoted cut short.
  void npyAbsurdHeadersAreRefused() {
    Bytes huge_len = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xF0, 0xFF, 0xFF, 0xFF, '{'};
    write_file(dir() / "len.npy", huge_len);
    QString msg = error_of([&] { load_npy(dir() / "len.npy"); });
    VERIFY_CONTAINS(msg, "len.npy: bad npy header: header length 4294967280 is over the limit");

    write_file(dir() / "prod.npy", npy_bytes(npy_dict("<f4", "(4294967296, 4294967296, 4294967296)"), {}));
    msg = error_of([&] { load_npy(dir() / "prod.npy"); });
    VERIFY_CONTAINS(msg, "prod.npy: bad npy header");
    VERIFY_CONTAINS(msg, "more than 2^56 elements");

    std::string rank65 = "(";
    for (int i = 0; i < 65; ++i) rank65 += "1, ";
    write_file(dir() / "rank.npy", npy_bytes(npy_dict("<f4", rank65 + ")"), le_bytes<float>({1})));
    msg = error_of([&] { load_npy(dir() / "rank.npy"); });
    VERIFY_CONTAINS(msg, "rank.npy: bad npy header: shape has more than 64 dimensions");

    write_file(dir() / "key.npy", npy_bytes("{'" + std::string(30000, 'k') + "': 1}", {}));
    msg = error_of([&] { load_npy(dir() / "key.npy"); });
    VERIFY_CONTAINS(msg, "unexpected key 'kkk");
    VERIFY_CONTAINS(msg, "... (30000 bytes)'");
    QVERIFY2(msg.size() < 300, qPrintable(msg));
  }

  // A FIFO in place of the file is refused at once; reading it would block with no writer.
  void npyAndIdxRefuseAFifo() {
    const fs::path fifo = dir() / "fifo.npy";
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    VERIFY_CONTAINS(error_of([&] { load_npy(fifo); }), "fifo.npy: is a FIFO");
    VERIFY_CONTAINS(error_of([&] { load_idx(fifo); }), "fifo.npy: is not a regular file");
  }

  void idxHugeShapesAreRefusedWithoutAllocating() {
    write_file(dir() / "wrap.idx", idx_bytes(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {1, 2, 3}));
    QString msg = error_of([&] { load_idx(dir() / "wrap.idx"); });
    VERIFY_CONTAINS(msg, "wrap.idx: bad IDX header: shape (4294967295, 4294967295, 4294967295) has more than 2^56 elements");
    // 2^50 bytes claimed, 3 present: refused having read only those.
    write_file(dir() / "claims.idx", idx_bytes(0x08, {1u << 30, 1u << 20}, {1, 2, 3}));
    msg = error_of([&] { load_idx(dir() / "claims.idx"); });
    VERIFY_CONTAINS(msg, "claims.idx: truncated IDX data (expected 1125899906842624 bytes");
    VERIFY_CONTAINS(msg, "got 3)");
  }

  // A gzip bomb: 256 MB of zeros after a header asking for 10 bytes. Only those are decompressed:
  // the process's peak memory does not grow by the bomb's size.
  void idxReadsOnlyWhatItsHeaderAsks() {
    gzFile f = gzopen((dir() / "bomb.idx.gz").c_str(), "wb");
    QVERIFY(f);
    const Bytes head = idx_bytes(0x08, {10}, Bytes(10, 7)), zeros(size_t(1) << 20, 0);
    gzwrite(f, head.data(), unsigned(head.size()));
    for (int i = 0; i < 256; ++i) gzwrite(f, zeros.data(), unsigned(zeros.size()));
    gzclose(f);
    rusage before{}, after{};
    getrusage(RUSAGE_SELF, &before);
    const Tensor t = load_idx(dir() / "bomb.idx.gz");
    getrusage(RUSAGE_SELF, &after);
    QVERIFY2(after.ru_maxrss - before.ru_maxrss < 64 * 1024, qPrintable(QString("peak grew by %1 kB").arg(after.ru_maxrss - before.ru_maxrss)));
    QCOMPARE(t.shape, (Shape{10}));
    QCOMPARE(t.data, std::vector<float>(10, 7.0f));
  }

  // ---- data spec ----

  void specUnknownKeyIsNamed() {
    const QString msg = error_of([] { spec_of(R"({"type": "npy", "features": "x.npy", "targets": "y.npy", "colour": 1})"); });
    VERIFY_CONTAINS(msg, "p.json: data.colour: unknown key");
  }

  void specKeyOfAnotherTypeIsRejected() {
    const QString msg = error_of([] { spec_of(R"({"type": "fashion_mnist", "kind": "ones"})"); });
    VERIFY_CONTAINS(msg, "p.json: data.kind: not used by data type 'fashion_mnist'");
  }

  void specUnknownTypeIsNamed() {
    const QString msg = error_of([] { spec_of(R"({"type": "cifar"})"); });
    VERIFY_CONTAINS(msg, "p.json: data.type: unknown data type 'cifar'");
  }

  void specMissingRequiredFieldIsNamed() {
    QString msg = error_of([] { spec_of(R"({"type": "npy", "features": "x.npy"})"); });
    VERIFY_CONTAINS(msg, "p.json: data: missing required field 'targets'");
    msg = error_of([] { spec_of(R"({"type": "synthetic", "kind": "blobs", "feature_shape": [2], "examples": 10})"); });
    VERIFY_CONTAINS(msg, "missing required field 'classes'");
    msg = error_of([] { spec_of(R"({"kind": "ones"})"); });
    VERIFY_CONTAINS(msg, "missing required field 'type'");
  }

  void specUnknownSyntheticKindMessage() {
    const QString msg = error_of([] { spec_of(R"({"type": "synthetic", "kind": "zeros"})"); });
    QCOMPARE(msg, QString("p.json: data.kind: unknown synthetic kind 'zeros' (expected ones, normal, blobs or copy)"));
  }

  void specBadValuesAreNamed() {
    QString msg = error_of([] { spec_of(R"({"type": "synthetic", "kind": "ones", "feature_shape": [0], "target_shape": [1], "examples": 4})"); });
    VERIFY_CONTAINS(msg, "data.feature_shape");
    msg = error_of([] { spec_of(R"({"type": "npy", "features": "x", "targets": "y", "test_fraction": 1.5})"); });
    VERIFY_CONTAINS(msg, "data.test_fraction: must be in [0, 1)");
    msg = error_of([] { spec_of(R"({"type": "npy", "features": "x", "targets": "y", "seed": -1})"); });
    VERIFY_CONTAINS(msg, "data.seed");
  }

  void specFashionDefaults() {
    const DataSpec s = spec_of(R"({"type": "fashion_mnist"})");
    QCOMPARE(s.dir, std::string("/usr/share/datasets/fashion-mnist"));
    QCOMPARE(s.scale, 1.0 / 255.0);
    const DataSpec t = spec_of(R"({"type": "synthetic", "kind": "normal", "feature_shape": [4, 2], "target_shape": [3],
                                  "examples": 8, "seed": 7, "test_fraction": 0.25})");
    QCOMPARE(t.feature_shape, (Shape{4, 2}));
    QCOMPARE(t.target_shape, (Shape{3}));
    QCOMPARE(t.examples, int64_t(8));
    QCOMPARE(t.seed, uint64_t(7));
    QCOMPARE(t.scale, 1.0);
  }

  // ---- datasets ----

  void syntheticSameSeedGivesSameData() {
    const DataSpec s = spec_of(R"({"type": "synthetic", "kind": "normal", "feature_shape": [16], "target_shape": [2],
                                  "examples": 50, "seed": 3, "test_fraction": 0.2})");
    const DataSplits a = load_dataset(s, dir()), b = load_dataset(s, dir());
    QCOMPARE(a.train.features.shape, (Shape{40, 16}));
    QCOMPARE(a.test.targets.shape, (Shape{10, 2}));
    QCOMPARE(a.train.features.data, b.train.features.data);
    QCOMPARE(a.test.targets.data, b.test.targets.data);
    DataSpec other = s;
    other.seed = 4;
    QVERIFY(load_dataset(other, dir()).train.features.data != a.train.features.data);
    // Roughly standard normal.
    double sum = 0, sq = 0;
    for (float v : a.train.features.data) { sum += v; sq += double(v) * v; }
    const double n = double(a.train.features.data.size());
    QVERIFY(std::abs(sum / n) < 0.15);
    QVERIFY(std::abs(sq / n - 1.0) < 0.2);
  }

  void syntheticOnesAreOnes() {
    const DataSplits d = load_dataset(spec_of(R"({"type": "synthetic", "kind": "ones", "feature_shape": [3],
                                                  "target_shape": [2], "examples": 5})"), dir());
    QCOMPARE(d.train.size(), int64_t(5));
    QCOMPARE(d.test.size(), int64_t(0));
    QCOMPARE(d.train.targets.shape, (Shape{5, 2}));
    QVERIFY(!d.train.integer_labels);
    for (float v : d.train.features.data) QCOMPARE(v, 1.0f);
    for (float v : d.train.targets.data) QCOMPARE(v, 1.0f);
  }

  void syntheticBlobsHaveLabelsInRangeAndAreLearnable() {
    const DataSplits d = load_dataset(spec_of(R"({"type": "synthetic", "kind": "blobs", "feature_shape": [8],
                                                  "classes": 5, "examples": 1000, "seed": 11, "test_fraction": 0.2})"), dir());
    QCOMPARE(d.train.size(), int64_t(800));
    QCOMPARE(d.test.size(), int64_t(200));
    QVERIFY(d.train.integer_labels && d.test.integer_labels);
    QCOMPARE(d.train.num_classes, int64_t(5));
    QCOMPARE(d.train.targets.shape, (Shape{800}));
    std::vector<int> count(5, 0);
    for (float v : d.train.targets.data) {
      QVERIFY(v >= 0 && v < 5 && v == std::floor(v));
      ++count[size_t(v)];
    }
    for (int c : count) QVERIFY(c > 100);
    // Nearest class mean, fitted on train, should classify the test split almost perfectly.
    std::vector<double> mean(5 * 8, 0.0);
    for (int64_t i = 0; i < 800; ++i)
      for (int j = 0; j < 8; ++j) mean[size_t(d.train.targets.data[size_t(i)]) * 8 + size_t(j)] += d.train.features.data[size_t(i * 8 + j)];
    for (int c = 0; c < 5; ++c)
      for (int j = 0; j < 8; ++j) mean[size_t(c * 8 + j)] /= count[size_t(c)];
    int correct = 0;
    for (int64_t i = 0; i < 200; ++i) {
      int best = 0;
      double best_d = 1e300;
      for (int c = 0; c < 5; ++c) {
        double dist = 0;
        for (int j = 0; j < 8; ++j) {
          const double diff = d.test.features.data[size_t(i * 8 + j)] - mean[size_t(c * 8 + j)];
          dist += diff * diff;
        }
        if (dist < best_d) { best_d = dist; best = c; }
      }
      correct += best == int(d.test.targets.data[size_t(i)]);
    }
    QVERIFY2(correct >= 180, qPrintable(QString("nearest-mean accuracy %1/200").arg(correct)));
  }

  void npyDatasetResolvesRelativePathsAndSplits() {
    fs::create_directories(dir() / "proj" / "data");
    std::vector<float> x(20 * 3);
    std::vector<int64_t> y(20);
    for (int i = 0; i < 20; ++i) { y[size_t(i)] = i % 4; for (int j = 0; j < 3; ++j) x[size_t(i * 3 + j)] = float(i); }
    write_file(dir() / "proj" / "data" / "x.npy", npy_bytes(npy_dict("<f4", "(20, 3)"), le_bytes(x)));
    write_file(dir() / "proj" / "data" / "y.npy", npy_bytes(npy_dict("<i8", "(20,)"), le_bytes(y)));
    const DataSpec s = spec_of(R"({"type": "npy", "features": "data/x.npy", "targets": "data/y.npy",
                                  "test_fraction": 0.25, "scale": 2, "seed": 5})");
    const DataSplits d = load_dataset(s, dir() / "proj");
    QCOMPARE(d.train.size(), int64_t(15));
    QCOMPARE(d.test.size(), int64_t(5));
    QVERIFY(d.train.integer_labels);
    QCOMPARE(d.train.num_classes, int64_t(4));
    // Every example lands in exactly one split with its own label, and features are scaled.
    std::set<int> seen;
    for (const Dataset* part : {&d.train, &d.test})
      for (int64_t r = 0; r < part->size(); ++r) {
        const int i = int(part->features.data[size_t(r * 3)] / 2);
        QCOMPARE(part->features.data[size_t(r * 3)], 2.0f * float(i));
        QCOMPARE(int(part->targets.data[size_t(r)]), i % 4);
        QVERIFY(seen.insert(i).second);
      }
    QCOMPARE(int(seen.size()), 20);
  }

  // ---- npz ----

  // Stored and deflated members (np.savez and np.savez_compressed), read by name.
  void npzReadsStoredAndDeflatedArrays() {
    write_file(dir() / "a.npz", testing::zip_bytes({{"x.npy", npy_bytes(npy_dict("<f4", "(3, 2)"), le_bytes<float>({1, 2, 3, 4, 5, 6.5f}))},
                                           {"y.npy", npy_bytes(npy_dict("<i8", "(3,)"), le_bytes<int64_t>({0, 2, 1})), true}}));
    QCOMPARE(npz_keys(dir() / "a.npz"), (std::vector<std::string>{"x", "y"}));
    const Tensor x = load_npz(dir() / "a.npz", "x");
    QCOMPARE(x.shape, (Shape{3, 2}));
    QCOMPARE(x.data[5], 6.5f);
    const Tensor y = load_npz(dir() / "a.npz", "y");
    QCOMPARE(y.data, (std::vector<float>{0, 2, 1}));
    QVERIFY(read_npz_header(dir() / "a.npz", "y").is_integer());
    QVERIFY(!read_npz_header(dir() / "a.npz", "x").is_integer());
    // The same with ZIP64 records, as written for members over 4 GiB.
    write_file(dir() / "a64.npz", testing::zip_bytes({{"x.npy", npy_bytes(npy_dict("<f4", "(3, 2)"), le_bytes<float>({1, 2, 3, 4, 5, 6.5f}))},
                                                     {"y.npy", npy_bytes(npy_dict("<i8", "(3,)"), le_bytes<int64_t>({0, 2, 1})), true}},
                                                    true));
    QCOMPARE(npz_keys(dir() / "a64.npz"), (std::vector<std::string>{"x", "y"}));
    QCOMPARE(load_npz(dir() / "a64.npz", "x").data, x.data);
    QCOMPARE(load_npz(dir() / "a64.npz", "y").data, y.data);
  }
  // What is wrong is named: the array asked for (and those there are), a damaged member, a file
  // that is not a zip archive, a member's npy header.
  void npzProblemsAreNamed() {
    const Bytes good = testing::zip_bytes({{"x.npy", npy_bytes(npy_dict("<f4", "(2,)"), le_bytes<float>({1, 2})), true},
                                  {"y.npy", npy_bytes(npy_dict("<f4", "(2,)"), le_bytes<float>({3, 4}))}});
    write_file(dir() / "b.npz", good);
    VERIFY_CONTAINS(error_of([&] { load_npz(dir() / "b.npz", "z"); }), "b.npz: no array 'z' (it holds x, y)");
    Bytes damaged = good;
    // The stored member's last payload byte (4 bytes from the end of its data), before the directory.
    const size_t stored_end = good.size() - 22 - 2 * (46 + 5);
    damaged[stored_end - 1] ^= 0x40;
    write_file(dir() / "damaged.npz", damaged);
    VERIFY_CONTAINS(error_of([&] { load_npz(dir() / "damaged.npz", "y"); }), "damaged.npz: array 'y': checksum mismatch");
    write_file(dir() / "cut.npz", Bytes(good.begin(), good.begin() + long(good.size() / 2)));
    VERIFY_CONTAINS(error_of([&] { npz_keys(dir() / "cut.npz"); }), "cut.npz: not an .npz file");
    write_file(dir() / "c.npz", testing::zip_bytes({{"x.npy", Bytes{'n', 'o', 't', ' ', 'n', 'p', 'y', '!', '!', '!'}}}));
    VERIFY_CONTAINS(error_of([&] { load_npz(dir() / "c.npz", "x"); }), "c.npz: array 'x': not an npy file");
    VERIFY_CONTAINS(error_of([&] { npz_keys(dir() / "missing.npz"); }), "missing.npz: no such file");
  }
  // A data source from an .npz: Keras's names give the splits (x_train, y_train, x_test, y_test),
  // others are named in the spec, and the probe agrees with what loads.
  void npzDatasetTakesKerasNamesOrNamedArrays() {
    std::vector<uint8_t> xtr(6 * 4), xte(2 * 4);
    for (size_t i = 0; i < xtr.size(); ++i) xtr[i] = uint8_t(i);
    for (size_t i = 0; i < xte.size(); ++i) xte[i] = uint8_t(200 + i);
    write_file(dir() / "keras.npz", testing::zip_bytes({{"x_train.npy", npy_bytes(npy_dict("|u1", "(6, 2, 2)"), xtr), true},
                                               {"y_train.npy", npy_bytes(npy_dict("|u1", "(6,)"), Bytes{0, 1, 2, 0, 1, 2})},
                                               {"x_test.npy", npy_bytes(npy_dict("|u1", "(2, 2, 2)"), xte), true},
                                               {"y_test.npy", npy_bytes(npy_dict("|u1", "(2,)"), Bytes{2, 1})}}));
    const DataSpec keras = spec_of(R"({"type": "npz", "file": "keras.npz", "scale": 0.5})");
    const DataSplits d = load_dataset(keras, dir());
    QCOMPARE(d.train.features.shape, (Shape{6, 2, 2}));
    QCOMPARE(d.test.features.shape, (Shape{2, 2, 2}));
    QCOMPARE(d.test.features.data[0], 100.0f);
    QVERIFY(d.train.integer_labels && d.test.integer_labels);
    QCOMPARE(d.train.num_classes, int64_t(3));
    const SourceShape probed = probe_dataset(keras, dir());
    QCOMPARE(probed.train.examples, int64_t(6));
    QCOMPARE(probed.test.examples, int64_t(2));
    QCOMPARE(probed.train.features, (Shape{2, 2}));

    // Named arrays, split by test_fraction.
    const DataSpec named = spec_of(R"({"type": "npz", "file": "keras.npz", "features": "x_train", "targets": "y_train",
                                        "test_fraction": 0.5, "seed": 1})");
    const DataSplits n = load_dataset(named, dir());
    QCOMPARE(n.train.size() + n.test.size(), int64_t(6));
    QCOMPARE(n.test.size(), int64_t(3));

    // An archive without those names asks for them, saying what it holds.
    write_file(dir() / "odd.npz", testing::zip_bytes({{"a.npy", npy_bytes(npy_dict("<f4", "(2,)"), le_bytes<float>({1, 2}))}}));
    VERIFY_CONTAINS(error_of([&] { load_dataset(spec_of(R"({"type": "npz", "file": "odd.npz"})"), dir()); }),
                    "odd.npz: it holds a, neither x_train and y_train nor x and y: name its arrays with data.features and data.targets");
    VERIFY_CONTAINS(error_of([&] { spec_of(R"({"type": "npz", "file": "k.npz", "features": "x"})"); }),
                    "p.json: data.features: features and targets must be named together");
    VERIFY_CONTAINS(error_of([&] { spec_of(R"({"type": "npz"})"); }), "file");
  }

  // A NaN or an infinity among the inputs is refused when the data loads, naming the file, the
  // example and the value, before anything trains on it (it would leave NaN weights that a
  // checkpoint then refuses).
  void nonFiniteInputsAreRefusedWhenLoaded() {
    fs::create_directories(dir() / "nan");
    std::vector<float> x(6 * 2, 1.0f), t(6, 0.5f);
    x[size_t(4 * 2 + 1)] = std::numeric_limits<float>::quiet_NaN();
    write_file(dir() / "nan" / "x.npy", npy_bytes(npy_dict("<f4", "(6, 2)"), le_bytes(x)));
    write_file(dir() / "nan" / "t.npy", npy_bytes(npy_dict("<f4", "(6,)"), le_bytes(t)));
    const DataSpec s = spec_of(R"({"type": "npy", "features": "nan/x.npy", "targets": "nan/t.npy"})");
    const QString err = testing::error_of([&] { load_dataset(s, dir()); });
    VERIFY_CONTAINS(err, QString::fromStdString((dir() / "nan" / "x.npy").string()) + ": example 4 holds NaN (value 1 of the example)");
    x[size_t(4 * 2 + 1)] = 1.0f;
    t[2] = std::numeric_limits<float>::infinity();
    write_file(dir() / "nan" / "x.npy", npy_bytes(npy_dict("<f4", "(6, 2)"), le_bytes(x)));
    write_file(dir() / "nan" / "t.npy", npy_bytes(npy_dict("<f4", "(6,)"), le_bytes(t)));
    VERIFY_CONTAINS(testing::error_of([&] { load_dataset(s, dir()); }), "t.npy: example 2 holds an infinity");
  }

  // ---- probing a source's shapes ----

  // The probe describes what load_dataset gives: split sizes, per-example shapes, labels.
  void probeOfSyntheticDataMatchesWhatLoads() {
    for (const char* json : {R"({"type": "synthetic", "kind": "blobs", "feature_shape": [8], "classes": 5,
                                 "examples": 100, "test_fraction": 0.2})",
                             R"({"type": "synthetic", "kind": "normal", "feature_shape": [2, 3], "target_shape": [4],
                                 "examples": 10})"}) {
      const DataSpec s = spec_of(json);
      const DataSplits d = load_dataset(s, dir());
      const SourceShape p = probe_dataset(s, dir());
      for (auto [probed, loaded] : {std::pair{p.train, shape_of(d.train)}, std::pair{p.test, shape_of(d.test)}}) {
        QCOMPARE(probed.examples, loaded.examples);
        QCOMPARE(probed.features, loaded.features);
        QCOMPARE(probed.targets, loaded.targets);
        QCOMPARE(probed.integer_labels, loaded.integer_labels);
        QCOMPARE(probed.num_classes, loaded.num_classes);
      }
    }
  }

  // IDX sources are described from the images' headers and the labels, as load_dataset gives them:
  // a plain and a gzipped pair here, and Fashion-MNIST itself where it is installed.
  void probeOfIdxDataMatchesWhatLoads() {
    fs::create_directories(dir() / "probe-idx");
    write_file(dir() / "probe-idx" / "tr-x", idx_bytes(0x08, {3, 2, 5}, Bytes(30, 7)));
    write_file(dir() / "probe-idx" / "tr-y", idx_bytes(0x08, {3}, Bytes{0, 4, 2}));
    write_gz(dir() / "probe-idx" / "te-x", idx_bytes(0x08, {2, 2, 5}, Bytes(20, 1)));
    write_gz(dir() / "probe-idx" / "te-y", idx_bytes(0x08, {2}, Bytes{1, 6}));
    std::vector<std::pair<DataSpec, fs::path>> sources = {
        {spec_of(R"({"type": "idx", "train_images": "tr-x", "train_labels": "tr-y", "test_images": "te-x",
                     "test_labels": "te-y"})"),
         dir() / "probe-idx"}};
    if (fs::exists(std::string(kFashionMnistDefaultDir) + "/train-images-idx3-ubyte.gz"))
      sources.push_back({spec_of(R"({"type": "fashion_mnist"})"), dir()});
    else
      qInfo("Fashion-MNIST is not installed (dataset-fashion-mnist): only the written IDX files are probed");
    for (const auto& [spec, base] : sources) {
      const DataSplits d = load_dataset(spec, base);
      const SourceShape p = probe_dataset(spec, base);
      for (auto [probed, loaded] : {std::pair{p.train, shape_of(d.train)}, std::pair{p.test, shape_of(d.test)}}) {
        QCOMPARE(probed.examples, loaded.examples);
        QCOMPARE(probed.features, loaded.features);
        QCOMPARE(probed.targets, loaded.targets);
        QCOMPARE(probed.integer_labels, loaded.integer_labels);
        QCOMPARE(probed.num_classes, loaded.num_classes);
      }
    }
    // A count that disagrees is left to the loader, whose error names the file.
    write_file(dir() / "probe-idx" / "tr-y", idx_bytes(0x08, {2}, Bytes{0, 4}));
    VERIFY_CONTAINS(error_of([&] { probe_dataset(sources[0].first, dir() / "probe-idx"); }), "tr-y");
  }

  // A synthetic source is described from its spec: 4 TB of it is not generated to be looked at.
  void probeOfHugeSyntheticDataGeneratesNothing() {
    const SourceShape p = probe_dataset(
        spec_of(R"({"type": "synthetic", "kind": "ones", "feature_shape": [1024], "target_shape": [1], "examples": 1000000000})"), dir());
    QCOMPARE(p.train.examples, int64_t(1000000000));
    QCOMPARE(p.train.features, (Shape{1024}));
  }

  // A file source is read once and remembered, and read again when the file changes.
  void probeOfFilesFollowsTheFiles() {
    fs::create_directories(dir() / "probe");
    auto write = [&](int64_t n, int64_t width) {
      std::vector<float> x(size_t(n * width), 1.0f);
      std::vector<int64_t> y(size_t(n), 1);
      write_file(dir() / "probe" / "x.npy",
                 npy_bytes(npy_dict("<f4", "(" + std::to_string(n) + ", " + std::to_string(width) + ")"), le_bytes(x)));
      write_file(dir() / "probe" / "y.npy", npy_bytes(npy_dict("<i8", "(" + std::to_string(n) + ",)"), le_bytes(y)));
    };
    const DataSpec s = spec_of(R"({"type": "npy", "features": "x.npy", "targets": "y.npy"})");
    write(6, 3);
    SourceShape p = probe_dataset(s, dir() / "probe");
    QCOMPARE(p.train.features, (Shape{3}));
    QVERIFY(p.train.integer_labels);
    QCOMPARE(p.train.num_classes, int64_t(2));
    write(7, 5);  // another size: the stamp changes even within the same second
    p = probe_dataset(s, dir() / "probe");
    QCOMPARE(p.train.features, (Shape{5}));
    QCOMPARE(p.train.examples, int64_t(7));
    fs::remove(dir() / "probe" / "x.npy");
    VERIFY_CONTAINS(error_of([&] { probe_dataset(s, dir() / "probe"); }), "data.features");
  }

  void idxDatasetMissingFileNamesPath() {
    const QString msg = error_of([&] {
      load_dataset(spec_of(R"({"type": "idx", "train_images": "gone/images.gz", "train_labels": "gone/labels.gz"})"), dir());
    });
    VERIFY_CONTAINS(msg, "gone/images.gz");
  }

  void fashionMissingDirNamesDebianPackage() {
    DataSpec s = spec_of(R"({"type": "fashion_mnist", "dir": "no-such-folder"})");
    const QString msg = error_of([&] { load_dataset(s, dir()); });
    VERIFY_CONTAINS(msg, "no-such-folder/train-images-idx3-ubyte");
    VERIFY_CONTAINS(msg, "dataset-fashion-mnist");
  }

  void idxDatasetPairsImagesWithLabels() {
    Bytes px(6 * 2 * 2), lb = {0, 1, 2, 0, 1, 2};
    for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t(i);
    write_gz(dir() / "im.gz", idx_bytes(0x08, {6, 2, 2}, px));
    write_gz(dir() / "lb.gz", idx_bytes(0x08, {6}, lb));
    const DataSplits d = load_dataset(
        spec_of(R"({"type": "idx", "train_images": "im.gz", "train_labels": "lb.gz", "scale": 0.5})"), dir());
    QCOMPARE(d.train.features.shape, (Shape{6, 2, 2}));
    QCOMPARE(d.train.features.data[5], 2.5f);
    QVERIFY(d.train.integer_labels);
    QCOMPARE(d.train.num_classes, int64_t(3));
    QCOMPARE(d.test.size(), int64_t(0));
    QCOMPARE(d.test.features.shape, (Shape{0, 2, 2}));
  }

  // ---- batch loader ----

  void loaderShuffleIsPermutationPerEpoch() {
    const Dataset ds = indexed_dataset(23);
    BatchLoader loader(ds, 5, 42, true, false, 2);
    QCOMPARE(loader.batches_per_epoch(), int64_t(5));
    std::vector<std::vector<int64_t>> epochs(3);
    for (int64_t e = 0; e < 3; ++e)
      for (int64_t k = 0; k < 5; ++k) {
        const Batch b = loader.next();
        QCOMPARE(b.epoch, e);
        QCOMPARE(b.index, k);
        QCOMPARE(b.features.shape, (Shape{k == 4 ? 3 : 5, 2}));
        for (int64_t r = 0; r < b.features.shape[0]; ++r)
          QCOMPARE(b.features.data[size_t(2 * r)], b.targets.data[size_t(r)]);  // rows stay paired
        for (int64_t id : ids(b)) epochs[size_t(e)].push_back(id);
      }
    for (auto order : epochs) {
      std::sort(order.begin(), order.end());
      std::vector<int64_t> all(23);
      std::iota(all.begin(), all.end(), 0);
      QCOMPARE(order, all);
    }
    QVERIFY(epochs[0] != epochs[1]);  // a new order each epoch
  }

  void loaderShuffleIsReproducibleBySeed() {
    const Dataset ds = indexed_dataset(40);
    auto stream = [&](uint64_t seed, int prefetch) {
      BatchLoader loader(ds, 8, seed, true, true, prefetch);
      std::vector<int64_t> out;
      for (int i = 0; i < 12; ++i)
        for (int64_t id : ids(loader.next())) out.push_back(id);
      return out;
    };
    const auto a = stream(9, 2);
    QCOMPARE(stream(9, 2), a);
    QCOMPARE(stream(9, 0), a);  // prefetching never changes the stream
    QCOMPARE(stream(9, 7), a);
    QVERIFY(stream(10, 2) != a);
  }

  // A process of a multi-process run loads only the rows its devices are fed: the same examples
  // in the same places as a whole batch, the rest left zero.
  void loaderWithRowsLoadsOnlyThoseRowsInTheSameOrder() {
    const Dataset ds = indexed_dataset(40);
    BatchLoader whole(ds, 8, 5, true, true, 2);
    BatchLoader part(ds, 8, 5, true, true, 2, {0, 0, 1, 1, 0, 1, 0, 0});
    for (int i = 0; i < 9; ++i) {
      const Batch a = whole.next(), b = part.next();
      QCOMPARE(b.features.shape, a.features.shape);
      for (int64_t r = 0; r < 8; ++r) {
        const bool fed = r == 2 || r == 3 || r == 5;
        QCOMPARE(b.targets.data[size_t(r)], fed ? a.targets.data[size_t(r)] : 0.0f);
        QCOMPARE(b.features.data[size_t(2 * r + 1)], fed ? a.features.data[size_t(2 * r + 1)] : 0.0f);
      }
    }
  }

  void loaderDropRemainderGivesFullBatchesOnly() {
    const Dataset ds = indexed_dataset(10);
    BatchLoader loader(ds, 4, 1, true, true);
    QCOMPARE(loader.batches_per_epoch(), int64_t(2));
    for (int i = 0; i < 7; ++i) {
      const Batch b = loader.next();
      QCOMPARE(b.features.shape, (Shape{4, 2}));
      QCOMPARE(b.targets.shape, (Shape{4}));
      QCOMPARE(b.epoch, int64_t(i / 2));
    }
  }

  void loaderEvalPassCoversEveryExampleOnce() {
    const Dataset ds = indexed_dataset(10);
    BatchLoader loader(ds, 4, 0, false, false);
    QCOMPARE(loader.batches_per_epoch(), int64_t(3));
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<int64_t> seen;
      std::vector<int64_t> sizes;
      Batch b;
      while (loader.next_in_epoch(b)) {
        sizes.push_back(b.features.shape[0]);
        for (int64_t id : ids(b)) seen.push_back(id);
      }
      QCOMPARE(sizes, (std::vector<int64_t>{4, 4, 2}));
      std::vector<int64_t> all(10);
      std::iota(all.begin(), all.end(), 0);
      QCOMPARE(seen, all);  // unshuffled: dataset order
      QVERIFY(!loader.next_in_epoch(b));  // stays finished until reset
      loader.reset();
    }
  }

  void loaderResetMidStreamRestartsFromTheFirstBatch() {
    const Dataset ds = indexed_dataset(50);
    BatchLoader loader(ds, 6, 3, true, true, 3);
    std::vector<std::vector<int64_t>> first;
    for (int i = 0; i < 4; ++i) first.push_back(ids(loader.next()));
    loader.reset();  // the worker is typically mid-batch here; its stale batch must be dropped
    for (int i = 0; i < 4; ++i) {
      const Batch b = loader.next();
      QCOMPARE(b.epoch, int64_t(0));
      QCOMPARE(b.index, int64_t(i));
      QCOMPARE(ids(b), first[size_t(i)]);
    }
  }

  void loaderRejectsBadBatchSize() {
    const Dataset ds = indexed_dataset(10);
    QString msg = error_of([&] { BatchLoader l(ds, 0, 0, false, false); });
    VERIFY_CONTAINS(msg, "batch_size must be positive, got 0");
    msg = error_of([&] { BatchLoader l(ds, 11, 0, true, true); });
    VERIFY_CONTAINS(msg, "batch_size 11");
    VERIFY_CONTAINS(msg, "10 examples");
    QVERIFY(error_of([&] { BatchLoader l(ds, 11, 0, false, false); }).isEmpty());  // one short batch is fine
  }

  // The promise: a run stopped mid-epoch (Stop, Ctrl-C) does not wait on its loader's worker, even
  // one blocked on a full queue. A worker never woken would hang; the 21 loaders here take
  // milliseconds, so 5 s tells the two apart with room for ctest -j2 and the sanitizers.
  void loaderStopsPromptlyWhenDestroyedMidEpoch() {
    const Dataset ds = indexed_dataset(100000);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; ++i) {
      BatchLoader loader(ds, 1000, uint64_t(i), true, true, 4);
      (void)loader.next();
      if (i % 2) (void)loader.next();
      // Destroyed here with the worker blocked on a full queue or mid-batch.
    }
    {
      BatchLoader untouched(ds, 1000, 0, true, true, 4);  // destroyed before anything is taken
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    QVERIFY2(ms < 5000, qPrintable(QString("took %1 ms").arg(ms)));
  }

  // ---- the real dataset ----

  void fashionMnistLoadsBothSplits() {
    if (!fs::exists(kFashionMnistDefaultDir)) {
      const QByteArray why = QByteArray("Fashion-MNIST not installed at ") + kFashionMnistDefaultDir +
                             " (Debian package dataset-fashion-mnist)";
      qInfo("%s", why.constData());
      QSKIP(why.constData());
    }
    const DataSplits d = load_dataset(spec_of(R"({"type": "fashion_mnist"})"), dir());
    QCOMPARE(d.train.features.shape, (Shape{60000, 28, 28}));
    QCOMPARE(d.test.features.shape, (Shape{10000, 28, 28}));
    QCOMPARE(d.train.targets.shape, (Shape{60000}));
    QCOMPARE(d.test.targets.shape, (Shape{10000}));
    QVERIFY(d.train.integer_labels && d.test.integer_labels);
    QCOMPARE(d.train.num_classes, int64_t(10));
    for (const Dataset* part : {&d.train, &d.test}) {
      const auto [lo, hi] = std::minmax_element(part->targets.data.begin(), part->targets.data.end());
      QCOMPARE(*lo, 0.0f);
      QCOMPARE(*hi, 9.0f);
      const auto [plo, phi] = std::minmax_element(part->features.data.begin(), part->features.data.end());
      QVERIFY(*plo >= 0.0f && *phi <= 1.0f);
      QVERIFY(*phi > 0.99f);  // scaled by 1/255, not left at 0..255 nor crushed
    }
  }
};

QTEST_APPLESS_MAIN(TestData)
#include "test_data.moc"
