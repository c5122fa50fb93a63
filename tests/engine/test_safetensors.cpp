// The safetensors reader and writer (engine/checkpoint/safetensors.h): round trips for every dtype,
// the exact file layout, a corpus of malformed files, conversion to float, atomic writes, and,
// where python3 has `safetensors` and `numpy`, interoperation with the reference implementation.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/safetensors.h"
#include "engine/tensor/convert.h"
#include "engine/util/error.h"
#include "tests/engine/python_runner.h"
#include "tests/engine/test_support.h"

using namespace shardlab;
using namespace shardlab::checkpoint;
namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

Q_DECLARE_METATYPE(shardlab::checkpoint::StoredDType)

using shardlab::testing::error_of;

using shardlab::testing::PyResult;
using shardlab::testing::run_python;

namespace {

const QString kInteropScript = QStringLiteral(SHARDLAB_SOURCE_DIR "/tests/reference/safetensors/interop.py");

void write_raw(const fs::path& p, const std::string& b) {
  std::ofstream out(p, std::ios::binary);
  out.write(b.data(), std::streamsize(b.size()));
}

std::string read_raw(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[size_t(i)] = char(uint8_t(v >> (8 * i)));
  return s;
}

// A file with the given header text (not padded) and `data_size` data bytes (0, 1, 2, ...).
std::string st_file(const std::string& header, size_t data_size) {
  std::string s = le64(header.size()) + header;
  for (size_t i = 0; i < data_size; ++i) s.push_back(char(i));
  return s;
}

// Little-endian bytes of the values, each converted to T.
template <class T, class V>
Bytes le_bytes(std::initializer_list<V> values) {
  Bytes b(values.size() * sizeof(T));
  uint8_t* out = b.data();
  for (V v : values) {
    const T t = T(v);
    std::memcpy(out, &t, sizeof(T));
    if constexpr (std::endian::native == std::endian::big) std::reverse(out, out + sizeof(T));
    out += sizeof(T);
  }
  return b;
}

Bytes pattern(size_t n, uint8_t seed) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = uint8_t(seed + 37 * i);
  return b;
}

void compare_tensors(const StoredTensor& got, const StoredTensor& want) {
  QCOMPARE(QString::fromStdString(got.name), QString::fromStdString(want.name));
  QCOMPARE(dtype_name(got.dtype), dtype_name(want.dtype));
  QCOMPARE(got.shape, want.shape);
  QVERIFY2(got.bytes == want.bytes, qPrintable("bytes of " + QString::fromStdString(want.name) + " differ"));
}

void compare_files(const SafetensorsFile& got, const SafetensorsFile& want) {
  QCOMPARE(got.tensors.size(), want.tensors.size());
  for (const StoredTensor& w : want.tensors) {
    const StoredTensor* g = got.find(w.name);
    QVERIFY2(g, qPrintable("missing tensor " + QString::fromStdString(w.name)));
    compare_tensors(*g, w);
  }
  QVERIFY(got.metadata == want.metadata);
}

// Must match EXPECTED and METADATA in tests/reference/safetensors/interop.py.
SafetensorsFile expected_interop() {
  SafetensorsFile f;
  auto add = [&](const char* name, StoredDType d, Shape s, Bytes b) { f.tensors.push_back({name, d, std::move(s), std::move(b)}); };
  add("f32", StoredDType::F32, {2, 3}, le_bytes<float>({0.0f, 1.5f, -2.25f, 3.0e38f, 1e-40f, -0.0f}));
  add("f16", StoredDType::F16, {4}, le_bytes<uint16_t>({0x3C00, 0xC100, 0x7BFF, 0x0001}));
  add("f64", StoredDType::F64, {2}, le_bytes<double>({1.0 / 3.0, -1e300}));
  add("i64", StoredDType::I64, {3},
      le_bytes<int64_t>({std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), int64_t(-1)}));
  add("i32", StoredDType::I32, {2}, le_bytes<int32_t>({std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()}));
  add("i16", StoredDType::I16, {1, 3}, le_bytes<int16_t>({-32768, 32767, -2}));
  add("i8", StoredDType::I8, {3}, le_bytes<int8_t>({-128, 127, 0}));
  add("u8", StoredDType::U8, {3}, le_bytes<uint8_t>({0, 255, 7}));
  add("bool", StoredDType::BOOL, {3}, Bytes{1, 0, 1});
  add("scalar", StoredDType::F32, {}, le_bytes<float>({7.0f}));
  add("empty", StoredDType::F32, {0}, Bytes{});
  add("empty2d", StoredDType::I32, {2, 0}, Bytes{});
  f.metadata = {{"format", "np"}, {"note", "h\xC3\xA9llo \xE2\x9C\x93"}};
  return f;
}

// Empty if python3 can import safetensors and numpy, else why not.
QString python_unavailable() {
  const PyResult r = run_python({"-c", "import safetensors, numpy"});
  if (!r.started) return r.out;
  if (r.exit_code != 0) return "python3 cannot import safetensors and numpy (" + r.out.trimmed().split('\n').last() + ")";
  return {};
}

}  // namespace

class TestSafetensors : public QObject {
  Q_OBJECT

 private slots:
  void dtypeNamesAndSizes();
  void roundTripEveryDtype_data();
  void roundTripEveryDtype();
  void roundTripMetadata();
  void roundTripNoTensors();
  void headerIsAlignedAndSpacePadded();
  void knownBytesOfTinyFile();
  void readerAcceptsAnyHeaderOrder();
  void readerAcceptsUnalignedHeader();
  void rejectsMalformedFiles_data();
  void rejectsMalformedFiles();
  void rejectsMissingFile();
  void writerRejectsInvalidInput();
  void toTensorConvertsEveryDtype();
  void toTensorRejectsInconsistentTensors();
  void fromTensorRoundTrip();
  void writeIsAtomic();
  void pythonReadsOurFile();
  void weReadPythonFile();
  void fuzzCorpusIsAcceptedOrRejectedCleanly();

 private:
  QTemporaryDir tmp_;
  fs::path path(const QString& name) const { return fs::path(tmp_.filePath(name).toStdString()); }
};

void TestSafetensors::dtypeNamesAndSizes() {
  const std::vector<std::tuple<StoredDType, const char*, size_t>> want = {
      {StoredDType::F32, "F32", 4}, {StoredDType::F16, "F16", 2}, {StoredDType::BF16, "BF16", 2}, {StoredDType::F64, "F64", 8},
      {StoredDType::I64, "I64", 8}, {StoredDType::I32, "I32", 4}, {StoredDType::I16, "I16", 2},   {StoredDType::I8, "I8", 1},
      {StoredDType::U8, "U8", 1},   {StoredDType::BOOL, "BOOL", 1}};
  for (const auto& [d, name, size] : want) {
    QCOMPARE(dtype_name(d), name);
    QCOMPARE(dtype_size(d), size);
  }
}

void TestSafetensors::roundTripEveryDtype_data() {
  QTest::addColumn<StoredDType>("dtype");
  for (StoredDType d : {StoredDType::F32, StoredDType::F16, StoredDType::BF16, StoredDType::F64, StoredDType::I64, StoredDType::I32, StoredDType::I16, StoredDType::I8,
                  StoredDType::U8, StoredDType::BOOL})
    QTest::newRow(dtype_name(d)) << d;
}

// Each dtype as a matrix, an empty tensor (shape [0] and [3, 0]) and a scalar (shape []), through a file.
void TestSafetensors::roundTripEveryDtype() {
  QFETCH(StoredDType, dtype);
  const size_t es = dtype_size(dtype);
  SafetensorsFile f;
  Bytes matrix = pattern(2 * 3 * es, 5), scalar = pattern(es, 9);
  if (dtype == StoredDType::BOOL) {
    matrix = {1, 0, 0, 1, 1, 0};
    scalar = {1};
  }
  f.tensors.push_back({"matrix", dtype, {2, 3}, matrix});
  f.tensors.push_back({"empty", dtype, {0}, {}});
  f.tensors.push_back({"empty.3x0", dtype, {3, 0}, {}});
  f.tensors.push_back({"scalar", dtype, {}, scalar});
  f.metadata = {{"dtype", dtype_name(dtype)}};

  const fs::path p = path(QString("every-%1.safetensors").arg(dtype_name(dtype)));
  write_safetensors(p, f);
  const SafetensorsFile back = read_safetensors(p);
  compare_files(back, f);
  // Tensors come back in header order, which the writer sorts by name.
  QCOMPARE(back.tensors.size(), size_t(4));
  QCOMPARE(back.tensors[0].name, std::string("empty"));
  QCOMPARE(back.tensors[1].name, std::string("empty.3x0"));
  QCOMPARE(back.tensors[2].name, std::string("matrix"));
  QCOMPARE(back.tensors[3].name, std::string("scalar"));
  // Writing what was read gives the same bytes.
  QCOMPARE(to_safetensors_bytes(back), read_raw(p));
}

void TestSafetensors::roundTripMetadata() {
  SafetensorsFile f;
  f.tensors.push_back({"w", StoredDType::F32, {1}, le_bytes<float>({2.0f})});
  f.metadata = {{"format", "pt"},
                {"empty", ""},
                {"quote\"and\\backslash", "line\nbreak\ttab"},
                {"unicode \xE2\x9C\x93", "\xF0\x9F\x98\x80 h\xC3\xA9llo"},
                {"json", R"({"nested": [1, 2]})"}};
  const fs::path p = path("metadata.safetensors");
  write_safetensors(p, f);
  const SafetensorsFile back = read_safetensors(p);
  compare_files(back, f);
  QCOMPARE(back.metadata.at("json"), std::string(R"({"nested": [1, 2]})"));
}

void TestSafetensors::roundTripNoTensors() {
  SafetensorsFile f;
  const std::string bytes = to_safetensors_bytes(f);
  QCOMPARE(bytes, le64(8) + "{}      ");
  const SafetensorsFile back = parse_safetensors(bytes, "none.safetensors");
  QVERIFY(back.tensors.empty());
  QVERIFY(back.metadata.empty());
  QVERIFY(back.find("x") == nullptr);
}

// For names of every length mod 8, the header is padded with spaces to a multiple of 8 bytes.
void TestSafetensors::headerIsAlignedAndSpacePadded() {
  for (size_t len = 1; len <= 16; ++len) {
    SafetensorsFile f;
    f.tensors.push_back({std::string(len, 'n'), StoredDType::F64, {2}, le_bytes<double>({1.0, 2.0})});
    const std::string b = to_safetensors_bytes(f);
    uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(b[size_t(i)])) << (8 * i);
    QCOMPARE(n % 8, uint64_t(0));
    QCOMPARE(b.size(), size_t(8 + n + 16));
    const std::string header = b.substr(8, n);
    const size_t json_end = header.find_last_of('}') + 1;
    QVERIFY(json_end + 8 > n);  // at most 7 bytes of padding
    QCOMPARE(header.substr(json_end), std::string(n - json_end, ' '));
    const auto j = nlohmann::json::parse(header.substr(0, json_end));
    QCOMPARE(j[std::string(len, 'n')]["data_offsets"], nlohmann::json({0, 16}));
    QCOMPARE(b.substr(8 + n), std::string(reinterpret_cast<const char*>(le_bytes<double>({1.0, 2.0}).data()), 16));
  }
}

// Byte for byte what the reference implementation writes for the same input (checked with
// safetensors 0.8.0's safetensors.numpy.save): metadata first, tensors sorted by name.
void TestSafetensors::knownBytesOfTinyFile() {
  SafetensorsFile f;
  f.tensors.push_back({"b", StoredDType::I8, {3}, {0x01, 0xFF, 0x7F}});
  f.tensors.push_back({"a", StoredDType::F16, {}, {0x00, 0x3C}});
  f.metadata["k"] = "v";

  const std::string header =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"F16","shape":[],"data_offsets":[0,2]},)"
      R"("b":{"dtype":"I8","shape":[3],"data_offsets":[2,5]}})"
      "      ";  // 130 bytes of JSON + 6 spaces = 136 = 0x88
  QCOMPARE(header.size(), size_t(136));
  std::string expected("\x88\x00\x00\x00\x00\x00\x00\x00", 8);
  expected += header;
  expected += std::string("\x00\x3C\x01\xFF\x7F", 5);

  QCOMPARE(to_safetensors_bytes(f), expected);
  const fs::path p = path("tiny.safetensors");
  write_safetensors(p, f);
  QCOMPARE(read_raw(p), expected);
}

// The reference implementation lays data out in its own order (by dtype), so the header order and
// the data order may differ; only the tiling of the buffer by data_offsets matters.
void TestSafetensors::readerAcceptsAnyHeaderOrder() {
  const std::string b = st_file(R"({"z":{"dtype":"U8","shape":[2],"data_offsets":[4,6]},)"
                                R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                R"("e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
                                6);
  const SafetensorsFile f = parse_safetensors(b, "order.safetensors");
  QCOMPARE(f.tensors.size(), size_t(3));
  QCOMPARE(f.tensors[0].name, std::string("z"));  // header order
  QCOMPARE(f.find("z")->bytes, (Bytes{4, 5}));
  QCOMPARE(f.find("a")->bytes, (Bytes{0, 1, 2, 3}));
  QVERIFY(f.find("e")->bytes.empty());
}

void TestSafetensors::readerAcceptsUnalignedHeader() {
  const std::string b = st_file(R"({"a":{"dtype":"I16","shape":[2],"data_offsets":[0,4]}})", 4);
  QVERIFY((b.size() - 12) % 8 != 0);
  const SafetensorsFile f = parse_safetensors(b, "unaligned.safetensors");
  QCOMPARE(f.find("a")->bytes, (Bytes{0, 1, 2, 3}));
}

void TestSafetensors::rejectsMalformedFiles_data() {
  QTest::addColumn<QByteArray>("bytes");
  QTest::addColumn<QString>("reason");
  QTest::addColumn<QString>("tensor");  // must be named in the message, when not empty

  auto row = [](const char* name, const std::string& bytes, const QString& reason, const QString& tensor = {}) {
    QTest::newRow(name) << QByteArray(bytes.data(), qsizetype(bytes.size())) << reason << tensor;
  };
  const std::string ok_a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  auto entry = [](const std::string& body) { return "{\"a\":{" + body + "}}"; };

  // Framing.
  row("empty file", "", "too short");
  row("shorter than 8 bytes", std::string("\x02\x00\x00\x00\x00", 5), "too short");
  row("header over 100 MB", le64(100'000'001) + "{}", "over the limit of 100000000");
  row("header length u64 max", le64(~uint64_t(0)) + "{}", "over the limit");
  row("header past end of file", le64(64) + "{}", "runs past the end of the file");
  // Header text.
  row("invalid UTF-8", st_file("{\"\xFF\":1}", 0), "not valid UTF-8");
  row("overlong UTF-8", st_file("{\"\xC0\xAF\":1}", 0), "not valid UTF-8");
  row("UTF-8 surrogate", st_file("{\"\xED\xA0\x80\":1}", 0), "not valid UTF-8");
  row("truncated UTF-8", st_file("{\"\xE2\x9C", 0), "not valid UTF-8");
  row("not JSON", st_file(R"({"a": )", 0), "not valid JSON");
  row("NUL padding", st_file(std::string("{}\0\0", 4), 0), "not valid JSON: NUL byte at header offset 2");
  row("NUL then garbage", st_file(std::string("{}\0garbage", 10), 0), "not valid JSON: NUL byte");
  row("trailing garbage", st_file("{} x", 0), "not valid JSON");
  row("JSON array", st_file("[1, 2]", 0), "does not start with '{'");
  row("leading space", st_file(" {}", 0), "does not start with '{'");
  row("empty header", st_file("", 0), "does not start with '{'");
  row("entry not object", st_file(R"({"a":[1]})", 0), "entry is not an object", "a");
  // dtype.
  row("unknown dtype", st_file(entry(R"("dtype":"F33","shape":[1],"data_offsets":[0,4])"), 4), "unknown dtype 'F33'", "a");
  row("unsupported dtype", st_file(entry(R"("dtype":"U16","shape":[1],"data_offsets":[0,2])"), 2),
      "unsupported dtype 'U16'", "a");
  row("lowercase dtype", st_file(entry(R"("dtype":"f32","shape":[1],"data_offsets":[0,4])"), 4), "unknown dtype 'f32'", "a");
  row("dtype not string", st_file(entry(R"("dtype":4,"shape":[1],"data_offsets":[0,4])"), 4), "dtype is not a string", "a");
  // shape.
  row("shape not list", st_file(entry(R"("dtype":"F32","shape":2,"data_offsets":[0,8])"), 8),
      "shape is not a list of non-negative integers", "a");
  row("negative dimension", st_file(entry(R"("dtype":"F32","shape":[-2],"data_offsets":[0,8])"), 8),
      "shape is not a list of non-negative integers", "a");
  row("float dimension", st_file(entry(R"("dtype":"F32","shape":[2.0],"data_offsets":[0,8])"), 8),
      "shape is not a list of non-negative integers", "a");
  row("string dimension", st_file(entry(R"("dtype":"F32","shape":["2"],"data_offsets":[0,8])"), 8),
      "shape is not a list of non-negative integers", "a");
  row("dimension over int64", st_file(entry(R"("dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,8])"), 8),
      "overflows a 64-bit signed integer", "a");
  row("element count overflow",
      st_file(entry(R"("dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0])"), 0),
      "element count of shape [4294967296, 4294967296, 0] overflows", "a");
  row("byte size overflow", st_file(entry(R"("dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0])"), 0),
      "byte size of shape [4611686018427387904] of F64 overflows", "a");
  // data_offsets.
  row("offsets not list", st_file(entry(R"("dtype":"F32","shape":[2],"data_offsets":"0-8")"), 8),
      "is not a pair [begin, end]", "a");
  row("one offset", st_file(entry(R"("dtype":"F32","shape":[2],"data_offsets":[8])"), 8), "is not a pair [begin, end]", "a");
  row("three offsets", st_file(entry(R"("dtype":"F32","shape":[2],"data_offsets":[0,8,8])"), 8),
      "is not a pair [begin, end]", "a");
  row("negative offset", st_file(entry(R"("dtype":"F32","shape":[0],"data_offsets":[-4,-4])"), 0),
      "is not a pair [begin, end]", "a");
  row("float offset", st_file(entry(R"("dtype":"F32","shape":[2],"data_offsets":[0,8.0])"), 8),
      "is not a pair [begin, end]", "a");
  row("begin after end", st_file(entry(R"("dtype":"F32","shape":[0],"data_offsets":[8,0])"), 8), "data_offsets [8, 0] have begin > end",
      "a");
  row("size mismatch", st_file(entry(R"("dtype":"F32","shape":[2],"data_offsets":[0,4])"), 4),
      "span 4 bytes but shape [2] of F32 needs 8", "a");
  row("scalar size mismatch", st_file(entry(R"("dtype":"F64","shape":[],"data_offsets":[0,4])"), 4),
      "span 4 bytes but shape [] of F64 needs 8", "a");
  // Tiling of the data buffer.
  row("overlapping offsets",
      st_file("{" + ok_a + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12), "overlap those of tensor 'a'",
      "b");
  row("identical offsets",
      st_file("{" + ok_a + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8), "overlap those of tensor 'a'",
      "b");
  row("gap between tensors",
      st_file("{" + ok_a + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})", 16), "gap of 4 bytes", "b");
  row("data not starting at 0", st_file(entry(R"("dtype":"F32","shape":[1],"data_offsets":[4,8])"), 8), "gap of 4 bytes",
      "a");
  row("offsets past end of buffer", st_file("{" + ok_a + "}", 6), "run past the end of the data buffer (6 bytes)", "a");
  row("empty tensor past end", st_file(entry(R"("dtype":"F32","shape":[0],"data_offsets":[9,9])"), 0),
      "run past the end of the data buffer (0 bytes)", "a");
  row("trailing bytes", st_file("{" + ok_a + "}", 9), "trailing bytes after the last tensor's data: the data buffer is 9 bytes, the tensors cover 8");
  row("data but no tensors", st_file("{}", 3), "the data buffer is 3 bytes, the tensors cover 0");
  // Names and keys.
  row("duplicate tensor name", st_file("{" + ok_a + "," + ok_a + "}", 8), "duplicate tensor name 'a'");
  row("duplicate key in entry",
      st_file(entry(R"("dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8])"), 8), "duplicate key 'dtype'", "a");
  row("duplicate __metadata__", st_file(R"({"__metadata__":{},"__metadata__":{}})", 0), "duplicate '__metadata__'");
  row("unknown key in entry", st_file(entry(R"("dtype":"F32","shape":[2],"data_offsets":[0,8],"offset":0)"), 8),
      "unknown key 'offset'", "a");
  row("missing dtype", st_file(entry(R"("shape":[2],"data_offsets":[0,8])"), 8), "missing 'dtype'", "a");
  row("missing shape", st_file(entry(R"("dtype":"F32","data_offsets":[0,8])"), 8), "missing 'shape'", "a");
  row("missing data_offsets", st_file(entry(R"("dtype":"F32","shape":[2])"), 8), "missing 'data_offsets'", "a");
  // Limits: a value from the file is quoted cut short; a shape has at most 64 dimensions.
  row("tensor name of 100,000 bytes", st_file("{\"" + std::string(100000, 'n') + "\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8),
      "... (100000 bytes)': missing 'dtype'");
  std::string dims65 = "1";
  for (int i = 0; i < 64; ++i) dims65 += ",1";
  row("shape of 65 dimensions", st_file(entry(R"("dtype":"F32","shape":[)" + dims65 + R"(],"data_offsets":[0,4])"), 4),
      "shape has 65 dimensions (at most 64)", "a");
  // __metadata__.
  row("metadata not object", st_file(R"({"__metadata__":"pt"})", 0), "__metadata__ is not an object of string to string");
  row("metadata list", st_file(R"({"__metadata__":[["k","v"]]})", 0), "__metadata__ is not an object of string to string");
  row("metadata number value", st_file(R"({"__metadata__":{"k":1}})", 0), "value for key 'k' is not a string");
  row("metadata nested value", st_file(R"({"__metadata__":{"k":{"x":"y"}}})", 0), "value for key 'k' is not a string");
  row("metadata duplicate key", st_file(R"({"__metadata__":{"k":"v","k":"w"}})", 0), "__metadata__: duplicate key 'k'");
}

// Each file breaks one rule; reading it throws an Error naming the file, the tensor and the reason.
void TestSafetensors::rejectsMalformedFiles() {
  QFETCH(QByteArray, bytes);
  QFETCH(QString, reason);
  QFETCH(QString, tensor);
  const QString file = QString("bad-%1.safetensors").arg(QString(QTest::currentDataTag()).replace(' ', '-'));
  const fs::path p = path(file);
  write_raw(p, bytes.toStdString());

  const QString msg = error_of([&] { read_safetensors(p); });
  QVERIFY2(!msg.isEmpty(), "no error");
  qDebug().noquote() << msg;
  VERIFY_CONTAINS(msg, QString::fromStdString(p.string()) + ": ");
  VERIFY_CONTAINS(msg, reason);
  if (!tensor.isEmpty()) VERIFY_CONTAINS(msg, "tensor '" + tensor + "'");
  QVERIFY2(msg.size() < 1000, "the message quotes too much of the file");

  // The same from memory, under the given name.
  const QString mem = error_of([&] { parse_safetensors(bytes.toStdString(), "in-memory.safetensors"); });
  QVERIFY(mem.startsWith("in-memory.safetensors: "));
  VERIFY_CONTAINS(mem, reason);
}

void TestSafetensors::rejectsMissingFile() {
  const fs::path p = path("does-not-exist.safetensors");
  const QString msg = error_of([&] { read_safetensors(p); });
  VERIFY_CONTAINS(msg, QString::fromStdString(p.string()));
  VERIFY_CONTAINS(msg, "cannot open");
  const QString dir = error_of([&] { read_safetensors(path("")); });
  VERIFY_CONTAINS(dir, "is a directory");
}

void TestSafetensors::writerRejectsInvalidInput() {
  auto bad = [](std::vector<StoredTensor> ts, std::map<std::string, std::string> meta = {}) {
    SafetensorsFile f;
    f.tensors = std::move(ts);
    f.metadata = std::move(meta);
    return error_of([&] { to_safetensors_bytes(f); });
  };
  VERIFY_CONTAINS(bad({{"w", StoredDType::F32, {2}, Bytes(8)}, {"w", StoredDType::I8, {1}, Bytes(1)}}),
                        "duplicate tensor name 'w'");
  VERIFY_CONTAINS(bad({{"w", StoredDType::F32, {2}, Bytes(7)}}), "tensor 'w': holds 7 bytes but shape [2] of F32 needs 8");
  VERIFY_CONTAINS(bad({{"s", StoredDType::F64, {}, Bytes(4)}}), "tensor 's': holds 4 bytes but shape [] of F64 needs 8");
  VERIFY_CONTAINS(bad({{"e", StoredDType::I32, {0}, Bytes(4)}}), "tensor 'e': holds 4 bytes but shape [0] of I32 needs 0");
  VERIFY_CONTAINS(bad({{"n", StoredDType::F32, {-1}, Bytes{}}}), "tensor 'n': shape [-1] has a negative dimension");
  VERIFY_CONTAINS(bad({{"o", StoredDType::F32, {int64_t(1) << 62, 8}, Bytes{}}}), "tensor 'o': the byte size");
  VERIFY_CONTAINS(bad({{"__metadata__", StoredDType::U8, {1}, Bytes(1)}}), "'__metadata__'");
  VERIFY_CONTAINS(bad({{"bad\xFFname", StoredDType::U8, {1}, Bytes(1)}}), "is not valid UTF-8");
  VERIFY_CONTAINS(bad({}, {{"k", "v\xC0"}}), "metadata value for key 'k' is not valid UTF-8");

  // write_safetensors names the file and writes nothing.
  const fs::path p = path("rejected.safetensors");
  SafetensorsFile f;
  f.tensors.push_back({"w", StoredDType::F32, {2}, Bytes(3)});
  const QString msg = error_of([&] { write_safetensors(p, f); });
  VERIFY_CONTAINS(msg, QString::fromStdString(p.string()) + ": tensor 'w'");
  QVERIFY(!fs::exists(p));
}

void TestSafetensors::toTensorConvertsEveryDtype() {
  auto conv = [](StoredDType d, Shape s, Bytes b) { return to_tensor(StoredTensor{"t", d, std::move(s), std::move(b)}); };
  auto same = [](const Tensor& t, const Shape& s, const std::vector<float>& v) {
    QCOMPARE(t.shape, s);
    QCOMPARE(t.data, v);
  };
  same(conv(StoredDType::F32, {3}, le_bytes<float>({1.0f, -2.5f, 1e-40f})), {3}, {1.0f, -2.5f, 1e-40f});
  same(conv(StoredDType::F16, {2, 2}, le_bytes<uint16_t>({0x3C00, 0xC100, 0x7BFF, 0x0001})), {2, 2},
       {1.0f, -2.5f, 65504.0f, 0x1p-24f});
  same(conv(StoredDType::BF16, {3}, le_bytes<uint16_t>({0x3F80, 0xC020, 0x4049})), {3}, {1.0f, -2.5f, 3.140625f});
  same(conv(StoredDType::F64, {3}, le_bytes<double>({0.1, -1e300, 2.0})), {3},
       {0.1f, -std::numeric_limits<float>::infinity(), 2.0f});
  same(conv(StoredDType::I64, {3}, le_bytes<int64_t>({int64_t(-5), int64_t(1) << 40, int64_t(16777217)})), {3},
       {-5.0f, 0x1p40f, 16777216.0f});
  same(conv(StoredDType::I32, {2}, le_bytes<int32_t>({-7, 2147483647})), {2}, {-7.0f, 2147483648.0f});
  same(conv(StoredDType::I16, {2}, le_bytes<int16_t>({-32768, 300})), {2}, {-32768.0f, 300.0f});
  same(conv(StoredDType::I8, {2}, le_bytes<int8_t>({-128, 5})), {2}, {-128.0f, 5.0f});
  same(conv(StoredDType::U8, {2}, le_bytes<uint8_t>({255, 0})), {2}, {255.0f, 0.0f});
  same(conv(StoredDType::BOOL, {3}, Bytes{1, 0, 1}), {3}, {1.0f, 0.0f, 1.0f});
  same(conv(StoredDType::F32, {}, le_bytes<float>({4.0f})), {}, {4.0f});
  same(conv(StoredDType::I8, {0, 4}, Bytes{}), {0, 4}, {});
  // The converted value of every F16 and BF16 pattern is what the helpers give.
  Bytes all;
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    all.push_back(uint8_t(h));
    all.push_back(uint8_t(h >> 8));
  }
  const Tensor f16 = conv(StoredDType::F16, {65536}, all), bf16 = conv(StoredDType::BF16, {65536}, all);
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    QCOMPARE(std::bit_cast<uint32_t>(f16.data[h]), std::bit_cast<uint32_t>(f16_to_float(uint16_t(h))));
    QCOMPARE(std::bit_cast<uint32_t>(bf16.data[h]), uint32_t(h) << 16);
  }
}

void TestSafetensors::toTensorRejectsInconsistentTensors() {
  const QString size = error_of([] { to_tensor(StoredTensor{"w.bad", StoredDType::F16, {3}, Bytes(4)}); });
  VERIFY_CONTAINS(size, "tensor 'w.bad'");
  VERIFY_CONTAINS(size, "holds 4 bytes but shape [3] of F16 needs 6");
  const QString neg = error_of([] { to_tensor(StoredTensor{"neg", StoredDType::F32, {-1}, Bytes{}}); });
  VERIFY_CONTAINS(neg, "tensor 'neg'");
  const QString boolean = error_of([] { to_tensor(StoredTensor{"mask", StoredDType::BOOL, {2}, Bytes{1, 2}}); });
  VERIFY_CONTAINS(boolean, "tensor 'mask': BOOL element 1 is 2");
}

void TestSafetensors::fromTensorRoundTrip() {
  const Tensor t({2, 2}, std::vector<float>{1.0f, -0.0f, 3.5e-42f, -1e30f});
  const StoredTensor s = from_tensor("layer/kernel", t);
  QCOMPARE(s.name, std::string("layer/kernel"));
  QCOMPARE(s.dtype, StoredDType::F32);
  QCOMPARE(s.shape, (Shape{2, 2}));
  QCOMPARE(s.bytes, le_bytes<float>({1.0f, -0.0f, 3.5e-42f, -1e30f}));
  const Tensor back = to_tensor(s);
  QCOMPARE(back.shape, t.shape);
  QCOMPARE(std::memcmp(back.data.data(), t.data.data(), 16), 0);  // bit for bit, -0 included

  SafetensorsFile f;
  f.tensors.push_back(from_tensor("scalar", Tensor(Shape{}, 2.0f)));
  f.tensors.push_back(s);
  const fs::path p = path("from-tensor.safetensors");
  write_safetensors(p, f);
  QCOMPARE(to_tensor(*read_safetensors(p).find("scalar")).data, std::vector<float>{2.0f});

  const QString msg = error_of([] { from_tensor("odd", Tensor(Shape{3}, std::vector<float>{1.0f})); });
  VERIFY_CONTAINS(msg, "tensor 'odd': shape [3] does not match its 1 elements");
}

// A failed write leaves nothing behind; a successful one replaces the file whole, without temporaries.
void TestSafetensors::writeIsAtomic() {
  SafetensorsFile f;
  f.tensors.push_back({"w", StoredDType::F32, {1}, le_bytes<float>({1.0f})});

  const fs::path missing_dir = path("no-such-dir");
  const fs::path p = missing_dir / "model.safetensors";
  const QString msg = error_of([&] { write_safetensors(p, f); });
  VERIFY_CONTAINS(msg, QString::fromStdString(p.string()));
  QVERIFY(!fs::exists(p));
  QVERIFY(!fs::exists(missing_dir));

  QTemporaryDir dir;
  const fs::path target = fs::path(dir.path().toStdString()) / "model.safetensors";
  write_safetensors(target, f);
  f.tensors[0] = {"w", StoredDType::F32, {2}, le_bytes<float>({2.0f, 3.0f})};
  write_safetensors(target, f);
  QCOMPARE(to_tensor(read_safetensors(target).tensors.at(0)).data, (std::vector<float>{2.0f, 3.0f}));
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir.path().toStdString())) {
    ++entries;
    QCOMPARE(e.path().filename().string(), std::string("model.safetensors"));
  }
  QCOMPARE(entries, 1);
}

void TestSafetensors::pythonReadsOurFile() {
  if (const QString why = python_unavailable(); !why.isEmpty()) {
    qInfo().noquote() << "skipping:" << why;
    QSKIP(qPrintable(why));
  }
  const fs::path p = path("ours-for-python.safetensors");
  write_safetensors(p, expected_interop());
  const PyResult r = run_python({kInteropScript, "check", QString::fromStdString(p.string())});
  qInfo().noquote() << r.out;
  QVERIFY2(r.exit_code == 0, qPrintable(r.out));
  QVERIFY(r.out.trimmed().endsWith("OK"));
}

void TestSafetensors::weReadPythonFile() {
  if (const QString why = python_unavailable(); !why.isEmpty()) {
    qInfo().noquote() << "skipping:" << why;
    QSKIP(qPrintable(why));
  }
  const fs::path p = path("python-for-us.safetensors");
  const PyResult r = run_python({kInteropScript, "write", QString::fromStdString(p.string())});
  QVERIFY2(r.exit_code == 0, qPrintable(r.out));
  const SafetensorsFile got = read_safetensors(p);
  compare_files(got, expected_interop());
  QCOMPARE(to_tensor(*got.find("f16")).data, (std::vector<float>{1.0f, -2.5f, 65504.0f, 0x1p-24f}));
  QCOMPARE(to_tensor(*got.find("bool")).data, (std::vector<float>{1.0f, 0.0f, 1.0f}));
}

// Every file of the fuzzer's corpus (tests/fuzz/corpus/safetensors, seeds and findings alike) read
// through the reader: a valid-* file is accepted, a bad-* file rejected, any other either; a
// rejection is an Error naming the file, and anything else (another exception, a crash) fails.
void TestSafetensors::fuzzCorpusIsAcceptedOrRejectedCleanly() {
  const fs::path corpus = fs::path(SHARDLAB_SOURCE_DIR) / "tests/fuzz/corpus/safetensors";
  QVERIFY2(fs::is_directory(corpus), corpus.c_str());
  int accepted = 0, rejected = 0;
  for (const auto& e : fs::directory_iterator(corpus)) {
    const fs::path p = e.path();
    const std::string name = p.filename().string();
    QString msg;
    try {
      read_safetensors(p);
    } catch (const Error& err) {
      msg = QString::fromStdString(err.what());
      VERIFY_CONTAINS(msg, QString::fromStdString(p.string()) + ": ");
    } catch (const std::exception& err) {
      QFAIL(qPrintable(QString("%1: not a shardlab::Error: %2").arg(QString::fromStdString(name), err.what())));
    }
    if (name.rfind("valid-", 0) == 0) QVERIFY2(msg.isEmpty(), qPrintable(QString::fromStdString(name) + ": " + msg));
    if (name.rfind("bad-", 0) == 0) QVERIFY2(!msg.isEmpty(), qPrintable(QString::fromStdString(name) + " was accepted"));
    ++(msg.isEmpty() ? accepted : rejected);
  }
  qInfo() << accepted << "corpus files accepted," << rejected << "rejected";
  QVERIFY(accepted >= 10);
  QVERIFY(rejected >= 40);
}

QTEST_APPLESS_MAIN(TestSafetensors)
#include "test_safetensors.moc"
