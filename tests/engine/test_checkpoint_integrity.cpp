// A checkpoint restores exactly what was saved or says why not: real corrupted files (a flipped
// byte, NaN bytes, a changed dtype, swapped offsets, a 4 GB sparse file, a FIFO, JSON nested a
// million deep, checkpoint.json values out of range or of the wrong type) are each refused with a
// message naming the file and the field or tensor, quickly and without reading the whole file;
// inspect and export refuse whatever resume refuses; and `export`, `train --log` and `--trace`
// write only to a regular file path outside any checkpoint.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/listing.h"
#include "engine/checkpoint/checkpoint_meta.h"
#include "engine/checkpoint/crc32c.h"
#include "engine/checkpoint/export.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/sharded.h"
#include "engine/data/batch_loader.h"
#include "engine/util/error.h"
#include "engine/util/json_limits.h"

using namespace shardlab;
using namespace shardlab::checkpoint;
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

const QString kCli = QStringLiteral(SHARDLAB_BINARY_DIR "/app/shardlab-cli");

const std::string kKernel = "params/dense/kernel";
const std::string kMu = "opt_state/mu/dense/kernel";
const std::string kNu = "opt_state/nu/dense/kernel";

Tensor filled(Shape s, float base) {
  Tensor t(std::move(s));
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = base + 0.25f * float(i);
  return t;
}

// A checkpoint as the trainer writes one: parameters, Adam's mu and nu (same shape, different
// values, so swapping them is visible) and a full checkpoint.json.
fs::path make_checkpoint(const fs::path& root, int64_t step = 6, uint64_t shard_bytes = 0) {
  std::vector<std::pair<std::string, Tensor>> arrays = {
      {kKernel, filled({4, 3}, 1.0f)}, {kMu, filled({4, 3}, -2.0f)}, {kNu, filled({4, 3}, 0.5f)}};
  Json meta;
  meta["format"] = "shardlab.checkpoint";
  meta["version"] = 1;
  meta["project"] = Json{{"name", "tiny"}};
  meta["data_position"] = step;
  meta["seed"] = 3;
  meta["mesh"] = "(one device)";
  meta["shardings"] = Json{{kKernel, "replicated"}, {kMu, "replicated"}, {kNu, "replicated"}};
  meta["metrics"] = Json{{"loss", 0.5}};
  return save(root, step, arrays, meta, shard_bytes);
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_all(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[size_t(i)] = char(v >> (8 * i));
  return s;
}

// A safetensors file split into its header JSON and data buffer, and put back together.
struct Parts {
  Json header;
  std::string data;
};
Parts split(const fs::path& p) {
  const std::string b = read_all(p);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(b[size_t(i)])) << (8 * i);
  return {Json::parse(b.substr(8, n)), b.substr(8 + n)};
}
void join(const fs::path& p, const Parts& parts) {
  const std::string h = parts.header.dump();
  write_all(p, le64(h.size()) + h + parts.data);
}

// Element 0 of `tensor` in `file` set to `value` and its checksum recomputed, as a run that had
// diverged would have saved it (before saves refused that) or a careless tool would write it.
void set_first_element(const fs::path& file, const std::string& tensor, float value) {
  Parts p = split(file);
  const size_t begin = p.header[tensor]["data_offsets"][0].get<size_t>(), end = p.header[tensor]["data_offsets"][1].get<size_t>();
  std::memcpy(p.data.data() + begin, &value, 4);
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", crc32c(p.data.data() + begin, end - begin));
  std::string v = p.header["__metadata__"][kChecksumPrefix + tensor].get<std::string>();
  v.replace(0, 8, hex);
  p.header["__metadata__"][kChecksumPrefix + tensor] = v;
  join(file, p);
}

// The error message `f` throws, or "" if it throws none.
template <typename F>
QString error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

#define VERIFY_CONTAINS(text, part) \
  QVERIFY2(QString(text).contains(part), qPrintable(QString("'%1' does not contain '%2'").arg(text, part)))

QString q(const fs::path& p) { return QString::fromStdString(p.string()); }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

long max_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// Bytes this process has read through read() and its kin (/proc/self/io's rchar, holes of a sparse
// file included); -1 where the kernel does not say.
long long bytes_read() {
  std::ifstream io("/proc/self/io");
  std::string key;
  long long value = -1;
  while (io >> key >> value)
    if (key == "rchar:") return value;
  return -1;
}

struct Cli {
  int exit_code = -1;
  QString out, err;
  double seconds = 0;
};
Cli run_cli(const QStringList& args) {
  QProcess p;
  const auto t0 = std::chrono::steady_clock::now();
  p.start(kCli, args);
  Cli r;
  if (!p.waitForStarted(10000)) return r;
  p.closeWriteChannel();
  if (!p.waitForFinished(60000)) {
    p.kill();
    p.waitForFinished();
    r.err = "timed out";
    return r;
  }
  r.seconds = seconds_since(t0);
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  return r;
}

// A refusal as a user sees it: exit 1 (never a signal's 128+), one line on stderr saying `part`.
void verify_refused(const Cli& r, const QString& part) {
  QCOMPARE(r.exit_code, 1);
  const QStringList lines = r.err.split('\n', Qt::SkipEmptyParts);
  QVERIFY2(lines.size() == 1, qPrintable(r.err));
  VERIFY_CONTAINS(r.err, part);
}

std::string nested(size_t depth, const std::string& open, const std::string& close, const std::string& inner) {
  std::string s;
  s.reserve(depth * (open.size() + close.size()) + inner.size());
  for (size_t i = 0; i < depth; ++i) s += open;
  s += inner;
  for (size_t i = 0; i < depth; ++i) s += close;
  return s;
}

// A project that trains in a moment on synthetic data, written to `file`.
void write_small_project(const QString& file) {
  std::ofstream(file.toStdString()) << R"({
    "format": "shardlab.project", "version": 1, "name": "small",
    "graph": {"nodes": [{"name": "x", "type": "Input", "params": {"shape": [16]}},
                        {"name": "dense", "type": "Dense", "params": {"features": 10}}],
              "edges": [{"from": "x.out", "to": "dense.in"}]},
    "loss": {"type": "mean_squared_error", "output": "dense"},
    "optimizer": {"type": "adam", "learning_rate": 0.1},
    "data": {"type": "synthetic", "kind": "ones", "feature_shape": [16], "target_shape": [10], "examples": 32},
    "training": {"batch_size": 8, "steps": 4, "eval": false}})";
}

// Every file under `dir` with its bytes (and a symlink's target), to show that nothing changed.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_symlink()) files[e.path().string()] = "-> " + fs::read_symlink(e.path()).string();
    else if (e.is_regular_file()) files[e.path().string()] = read_all(e.path());
    else files[e.path().string()] = e.is_directory() ? "(directory)" : "(special)";
  }
  return files;
}

}  // namespace

class TestCheckpointIntegrity : public QObject {
  Q_OBJECT
 private slots:
  // ---------------------------------------------------------------------------------- CRC32C

  void crc32cMatchesTheStandardCheckValues() {
    QCOMPARE(crc32c("123456789", 9), 0xE3069283u);  // the catalogue's check value for CRC-32C
    QCOMPARE(crc32c_portable("123456789", 9), 0xE3069283u);
    QCOMPARE(crc32c("", 0), 0u);
    const std::string zeros(32, '\0'), ones(32, '\xFF');
    QCOMPARE(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720, B.4
    QCOMPARE(crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  }

  void crc32cHardwareAndPortablePathsAgree() {
    std::string b(1000, '\0');
    for (size_t i = 0; i < b.size(); ++i) b[i] = char(i * 131 + 7);
    for (size_t start = 0; start < 9; ++start)
      for (size_t len = 0; len + start <= 300; len += 7) {
        const uint32_t hw = crc32c(b.data() + start, len), sw = crc32c_portable(b.data() + start, len);
        QCOMPARE(hw, sw);
        // Continuing a CRC equals the CRC of the whole.
        QCOMPARE(crc32c(b.data() + start + len / 2, len - len / 2, crc32c(b.data() + start, len / 2)), hw);
      }
  }

  // ------------------------------------------------------------------------------- checksums

  void savedFilesCarryAChecksumPerTensor() {
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString());
    const SafetensorsFile f = read_safetensors(ckpt / kSingleFile);
    QCOMPARE(f.metadata.at("step"), std::string("6"));
    for (const StoredTensor& t : f.tensors) {
      const std::string v = f.metadata.at(kChecksumPrefix + t.name);
      QCOMPARE(v, checksum_of(t));
      QCOMPARE(v.substr(8), std::string(" F32 [4, 3]"));
    }
    // Shards check their own tensors only.
    QTemporaryDir sharded;
    const fs::path s = make_checkpoint(sharded.path().toStdString(), 6, 48);
    ModelFiles where;
    read_model(s, &where);
    QCOMPARE(where.files.size(), size_t(3));
    for (const std::string& file : where.files) {
      const SafetensorsFile shard = read_safetensors(s / file);
      int keys = 0;
      for (const auto& [k, v] : shard.metadata) keys += k.rfind(kChecksumPrefix, 0) == 0;
      QCOMPARE(keys, int(shard.tensors.size()));
    }
  }

  void aFlippedDataByteFailsTheChecksum() {
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString());
    const fs::path file = ckpt / kSingleFile;
    Parts p = split(file);
    const uint64_t at = p.header[kNu]["data_offsets"][0].get<uint64_t>() + 5;
    p.data[at] = char(p.data[at] ^ 0x10);
    join(file, p);
    const QString msg = error_of([&] { load(ckpt); });
    VERIFY_CONTAINS(msg, q(file) + ": tensor '" + QString::fromStdString(kNu) + "': CRC32C mismatch");
  }

  void aFlippedByteInAShardNamesTheShard() {
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString(), 6, 48);
    const fs::path shard = ckpt / shard_name(2, 3);
    std::string b = read_all(shard);
    b.back() = char(b.back() ^ 1);
    write_all(shard, b);
    const QString msg = error_of([&] { load(ckpt); });
    VERIFY_CONTAINS(msg, q(shard) + ": tensor '");
    VERIFY_CONTAINS(msg, "CRC32C mismatch");
  }

  void nanBytesInTheFileFailTheChecksum() {
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString());
    const fs::path file = ckpt / kSingleFile;
    Parts p = split(file);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(&p.data[p.header[kKernel]["data_offsets"][0].get<uint64_t>()], &nan, 4);
    join(file, p);
    VERIFY_CONTAINS(error_of([&] { load(ckpt); }), "tensor '" + QString::fromStdString(kKernel) + "': CRC32C mismatch");
  }

  // Without checksums (an older file, or one another tool wrote) a NaN is still caught on load.
  void nanOrInfinityInRestoredArraysIsReported_data() {
    QTest::addColumn<float>("value");
    QTest::addColumn<QString>("word");
    QTest::newRow("NaN") << std::numeric_limits<float>::quiet_NaN() << "is NaN";
    QTest::newRow("inf") << std::numeric_limits<float>::infinity() << "is infinite";
    QTest::newRow("-inf") << -std::numeric_limits<float>::infinity() << "is infinite";
  }
  void nanOrInfinityInRestoredArraysIsReported() {
    QFETCH(float, value);
    QFETCH(QString, word);
    // Written with its checksum (as saves did before refusing a diverged run's arrays).
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString());
    set_first_element(ckpt / kSingleFile, kKernel, value);
    const QString msg = error_of([&] { load(ckpt); });
    VERIFY_CONTAINS(msg, q(ckpt / kSingleFile) + ": tensor '" + QString::fromStdString(kKernel) + "': element 0 " + word);
    VERIFY_CONTAINS(msg, "diverged");
    // Written into a file without checksums, in the optimizer state.
    QTemporaryDir dir2;
    const fs::path c2 = make_checkpoint(dir2.path().toStdString());
    Parts p = split(c2 / kSingleFile);
    for (auto it = p.header["__metadata__"].begin(); it != p.header["__metadata__"].end();)
      it = it.key().rfind(kChecksumPrefix, 0) == 0 ? p.header["__metadata__"].erase(it) : std::next(it);
    std::memcpy(&p.data[p.header[kMu]["data_offsets"][0].get<uint64_t>() + 8], &value, 4);
    join(c2 / kSingleFile, p);
    VERIFY_CONTAINS(error_of([&] { load(c2); }), "tensor '" + QString::fromStdString(kMu) + "': element 2 " + word);
  }

  void aDtypeChangedInTheHeaderIsRefused() {
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString());
    const fs::path file = ckpt / kSingleFile;
    Parts p = split(file);
    p.header[kKernel]["dtype"] = "I32";  // same size: only the checksum's description can tell
    join(file, p);
    const QString msg = error_of([&] { load(ckpt); });
    VERIFY_CONTAINS(msg, q(file) + ": tensor '" + QString::fromStdString(kKernel) +
                             "': the header says I32 [4, 3] but its checksum was written for F32 [4, 3]");
  }

  void swappedMuAndNuOffsetsFailTheChecksum() {
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString());
    const fs::path file = ckpt / kSingleFile;
    Parts p = split(file);
    std::swap(p.header[kMu]["data_offsets"], p.header[kNu]["data_offsets"]);
    join(file, p);
    const QString msg = error_of([&] { load(ckpt); });
    VERIFY_CONTAINS(msg, q(file) + ": tensor '");
    VERIFY_CONTAINS(msg, "CRC32C mismatch");
  }

  void aMalformedChecksumIsRefused() {
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString());
    Parts p = split(ckpt / kSingleFile);
    p.header["__metadata__"][kChecksumPrefix + kMu] = "xyz";
    join(ckpt / kSingleFile, p);
    VERIFY_CONTAINS(error_of([&] { load(ckpt); }), "tensor '" + QString::fromStdString(kMu) + "': __metadata__ 'crc32c.");
  }

  void filesWithoutChecksumsStillLoad() {
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString());
    Parts p = split(ckpt / kSingleFile);
    // As Shardlab wrote it before checksums: its format and step, no crc32c.* keys.
    for (auto it = p.header["__metadata__"].begin(); it != p.header["__metadata__"].end();)
      it = it.key().rfind(kChecksumPrefix, 0) == 0 ? p.header["__metadata__"].erase(it) : std::next(it);
    join(ckpt / kSingleFile, p);
    write_all(ckpt / kCommitFile, "committed\n");  // its marker, as saves then wrote it
    const Loaded c = load(ckpt);
    QCOMPARE(c.arrays.at(kKernel).data, filled({4, 3}, 1.0f).data);
    QCOMPARE(c.arrays.at(kNu).data, filled({4, 3}, 0.5f).data);
  }

  // --------------------------------------------------------------------- reading before checking

  void aSparse4GBFileIsRefusedUnreadWithSmallMemory() {
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString());
    const fs::path file = ckpt / kSingleFile;
    QCOMPARE(::truncate(file.c_str(), off_t(4) << 30), 0);  // a valid header, then 4 GB of holes
    // The promise: a file far larger than its header says is refused from its size, before its
    // data is read or mapped (so at once, whatever the disk). Counted in bytes read and memory
    // touched rather than seconds, so that a loaded machine or a sanitizer cannot fail it.
    const long rss0 = max_rss_kb();
    const long long read0 = bytes_read();
    const QString msg = error_of([&] { load(ckpt); });
    const long long read = bytes_read() - read0;
    VERIFY_CONTAINS(msg, q(file) + ": trailing bytes");
    if (read0 >= 0) QVERIFY2(read < (1 << 20), qPrintable(QString("read %1 bytes").arg(read)));
    QVERIFY2(max_rss_kb() - rss0 < 64 * 1024, qPrintable(QString("peak RSS grew by %1 KB").arg(max_rss_kb() - rss0)));
  }

  void aHeaderLongerThanTheFileIsRefusedBeforeReadingIt() {
    QTemporaryDir dir;
    const fs::path file = fs::path(dir.path().toStdString()) / "short.safetensors";
    write_all(file, le64(90'000'000) + "{}");
    VERIFY_CONTAINS(error_of([&] { read_safetensors(file); }), q(file) + ": header length 90000000 runs past the end");
  }

  void nonRegularFilesAreRefusedWithoutBlocking_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("kind");
    QTest::newRow("model FIFO") << kSingleFile << "is a FIFO";
    QTest::newRow("checkpoint.json FIFO") << kMetaFile << "is a FIFO";
    QTest::newRow("model directory") << kSingleFile << "is a directory";
    QTest::newRow("checkpoint.json directory") << kMetaFile << "is a directory";
  }
  void nonRegularFilesAreRefusedWithoutBlocking() {
    QFETCH(QString, name);
    QFETCH(QString, kind);
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString());
    const fs::path p = ckpt / name.toStdString();
    fs::remove(p);
    if (kind.contains("FIFO")) QCOMPARE(::mkfifo(p.c_str(), 0644), 0);  // no writer: a blocking open waits forever
    else fs::create_directory(p);
    // A blocking open of a FIFO without a writer would never return: any bound tells the two apart,
    // and 10 s holds on a loaded machine and under a sanitizer.
    const auto t0 = std::chrono::steady_clock::now();
    const QString msg = error_of([&] { load(ckpt); });
    QVERIFY(seconds_since(t0) < 10.0);
    VERIFY_CONTAINS(msg, q(p) + ": " + kind);
  }

  void aFifoInPlaceOfAShardOrIndexIsRefused() {
    for (const std::string victim : {std::string(kIndexFile), shard_name(1, 3)}) {
      QTemporaryDir dir;
      const fs::path ckpt = make_checkpoint(dir.path().toStdString(), 6, 48);
      fs::remove(ckpt / victim);
      QCOMPARE(::mkfifo((ckpt / victim).c_str(), 0644), 0);
      VERIFY_CONTAINS(error_of([&] { load(ckpt); }), q(ckpt / victim) + ": is a FIFO");
    }
  }

  // The listing a resume and the Checkpoints browser read: a FIFO as a committed step's
  // checkpoint.json is listed as unreadable, with the reason, without blocking.
  void theListingReportsAFifoMetadataFile() {
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString());
    fs::remove(ckpt / kMetaFile);
    QCOMPARE(::mkfifo((ckpt / kMetaFile).c_str(), 0644), 0);
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<checkpoint::Entry> entries = checkpoint::list(dir.path().toStdString());
    QVERIFY(seconds_since(t0) < 10.0);  // a blocking open would never return (see above)
    QCOMPARE(entries.size(), size_t(1));
    VERIFY_CONTAINS(QString::fromStdString(entries[0].error), q(ckpt / kMetaFile) + ": is a FIFO");
  }

  void inspectOfAFifoFailsAtOnce() {
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString());
    fs::remove(ckpt / kSingleFile);
    QCOMPARE(::mkfifo((ckpt / kSingleFile).c_str(), 0644), 0);
    const Cli r = run_cli({"inspect", q(ckpt)});
    verify_refused(r, q(ckpt / kSingleFile) + ": is a FIFO");
    QVERIFY(r.seconds < 10);
  }

  // ------------------------------------------------------------------------------------ nesting

  void jsonDepthIsCountedOutsideStrings() {
    const std::string brackets_in_string = "{\"a\": [1, {\"b\": \"[[[[{{{{\"}]}";
    const std::string escaped_quote = "[\"\\\"[[[\", [[]]]";
    QCOMPARE(util::json_depth(brackets_in_string, 64), size_t(3));
    QCOMPARE(util::json_depth(escaped_quote, 64), size_t(3));
    QCOMPARE(util::json_depth(nested(1000, "[", "]", ""), 10), size_t(11));  // stops once past the limit
  }

  void aShapeNested100000DeepIsRefused() {
    const std::string header = R"({"t":{"dtype":"F32","shape":)" + nested(100'000, "[", "]", "1") +
                               R"(,"data_offsets":[0,4]}})";
    const std::string bytes = le64(header.size()) + header + std::string(4, '\0');
    QTemporaryDir dir;
    const fs::path file = fs::path(dir.path().toStdString()) / "deep.safetensors";
    write_all(file, bytes);
    VERIFY_CONTAINS(error_of([&] { read_safetensors(file); }), q(file) + ": header: JSON nested deeper than 64 levels");
    VERIFY_CONTAINS(error_of([&] { parse_safetensors(bytes, "mem"); }), "mem: header: JSON nested deeper than 64 levels");
  }

  void aProjectNestedAMillionDeepIsRefused() {
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString());
    Json meta = Json::parse(read_all(ckpt / kMetaFile));
    meta["project"] = "@";
    std::string text = meta.dump();
    text.replace(text.find("\"@\""), 3, nested(1'000'000, "{\"a\":", "}", "1"));
    write_all(ckpt / kMetaFile, text);
    const QString msg = error_of([&] { load(ckpt); });
    VERIFY_CONTAINS(msg, q(ckpt / kMetaFile) + ": JSON nested deeper than 64 levels");
    QVERIFY(msg.size() < 300);
  }

  void anIndexNestedDeepIsRefused() {
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString(), 6, 48);
    write_all(ckpt / kIndexFile, R"({"metadata": )" + nested(200'000, "[", "]", "") + "}");
    VERIFY_CONTAINS(error_of([&] { load(ckpt); }), q(ckpt / kIndexFile) + ": JSON nested deeper than 64 levels");
  }

  // ---------------------------------------------------------------------------- checkpoint.json

  // Each row sets one field of a valid checkpoint.json of step 6 (saved as step_000006); `null`
  // as the value removes the field.
  void checkpointJsonIsCheckedAgainstItsSchema_data() {
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("value");  // JSON text
    QTest::addColumn<QString>("message");
    auto row = [](const char* tag, const char* field, const char* value, const char* message) {
      QTest::newRow(tag) << field << value << message;
    };
    row("step negative", "step", "-5", "step: -5 is negative");
    row("step behind its directory", "step", "3", "step: 3 does not match the directory's step 6");
    row("step INT64_MAX", "step", "9223372036854775807", "step: 9223372036854775807 is over the limit of 9007199254740992");
    row("step fractional", "step", "6.5", "step: 6.5 is a fractional number, not an integer");
    row("step as float", "step", "6.0", "step: 6.0 is a fractional number, not an integer");
    row("step string", "step", "\"6\"", "step: \"6\" is a string, not an integer");
    row("step boolean", "step", "true", "step: true is a boolean, not an integer");
    row("step missing", "step", "null", "step: missing");
    row("data_position negative", "data_position", "-100", "data_position: -100 is negative");
    row("data_position fractional", "data_position", "3.5", "data_position: 3.5 is a fractional number, not an integer");
    row("data_position 2^63-1", "data_position", "9223372036854775807",
        "data_position: 9223372036854775807 is over the limit of 9007199254740992");
    row("data_position 2^53+1", "data_position", "9007199254740993", "data_position: 9007199254740993 is over the limit");
    row("data_position 2^64", "data_position", "18446744073709551616", "data_position: 1.8446744073709552e+19 is a fractional number");
    row("data_position string", "data_position", "\"x\"", "data_position: \"x\" is a string, not an integer");
    row("seed negative", "seed", "-1", "seed: -1 is negative");
    row("seed list", "seed", "[3]", "seed: [3] is a list, not a non-negative integer");
    row("mesh number", "mesh", "5", "mesh: 5 is an integer, not a string");
    row("shardings list", "shardings", "[]", "shardings: is a list, not an object of name to string");
    row("shardings value", "shardings", R"({"params/dense/kernel": 1})", "shardings.params/dense/kernel: 1 is an integer, not a string");
    row("metrics value", "metrics", R"({"loss": "low"})", "metrics.loss: \"low\" is a string, not a number");
    row("project string", "project", "\"x\"", "project: is a string, not an object");
    row("format other", "format", "\"safetensors\"", "format: \"safetensors\" is not \"shardlab.checkpoint\"");
    row("format missing", "format", "null", "format: missing");
    row("version newer", "version", "3", "version: 3 is newer than this build of Shardlab reads (version 2)");
    row("version zero", "version", "0", "version: 0 is below 1");
    row("version string", "version", "\"1\"", "version: \"1\" is not an integer");
    row("version missing", "version", "null", "version: missing");
  }
  void checkpointJsonIsCheckedAgainstItsSchema() {
    QFETCH(QString, field);
    QFETCH(QString, value);
    QFETCH(QString, message);
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString());
    QCOMPARE(ckpt.filename().string(), std::string("step_000006"));
    Json meta = Json::parse(read_all(ckpt / kMetaFile));
    if (value == "null") meta.erase(field.toStdString());
    else meta[field.toStdString()] = "@@";
    std::string text = meta.dump();
    if (value != "null") text.replace(text.find("\"@@\""), 4, value.toStdString());  // the literal text, as written
    write_all(ckpt / kMetaFile, text);
    const QString msg = error_of([&] { load(ckpt); });
    VERIFY_CONTAINS(msg, q(ckpt / kMetaFile) + ": " + message);
    QVERIFY2(!msg.contains("json.exception"), qPrintable(msg));
  }

  void checkpointJsonThatIsNotAnObjectOrNotJsonIsRefused() {
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString());
    write_all(ckpt / kMetaFile, "[1, 2]");
    VERIFY_CONTAINS(error_of([&] { load(ckpt); }), q(ckpt / kMetaFile) + ": is a list, not a JSON object");
    write_all(ckpt / kMetaFile, "{\"step\": ");
    VERIFY_CONTAINS(error_of([&] { load(ckpt); }), q(ckpt / kMetaFile) + ": malformed JSON");
  }

  void theTensorFilesStepMustMatch() {
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString());
    Parts p = split(ckpt / kSingleFile);
    p.header["__metadata__"]["step"] = "5";
    join(ckpt / kSingleFile, p);
    VERIFY_CONTAINS(error_of([&] { load(ckpt); }),
                    q(ckpt / kSingleFile) + ": __metadata__ step '5' does not match checkpoint.json's step 6");
  }

  void aValidCheckpointLoadsWithItsFields() {
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(dir.path().toStdString(), 12);
    const Loaded c = load(ckpt);
    QCOMPARE(c.step, int64_t(12));
    QCOMPARE(c.data_position, int64_t(12));
    QCOMPARE(c.arrays.size(), size_t(3));
    // A directory not named step_NNNNNN (copied elsewhere) still loads: there is no name to check.
    const fs::path copy = fs::path(dir.path().toStdString()) / "best";
    fs::copy(ckpt, copy);
    QCOMPARE(load(copy).step, int64_t(12));
  }

  void saveRefusesWhatLoadWouldRefuse() {
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    const std::vector<std::pair<std::string, Tensor>> arrays = {{kKernel, filled({2}, 1.0f)}};
    // INT64_MAX + 3 steps, wrapped: the save that wrote step_-9223372036854775804.
    VERIFY_CONTAINS(error_of([&] { save(root, std::numeric_limits<int64_t>::min() + 4, arrays, Json::object()); }),
                    "cannot save a checkpoint of step -9223372036854775804");
    VERIFY_CONTAINS(error_of([&] { save(root, 4, arrays, Json{{"data_position", -1}}); }),
                    "step_000004/checkpoint.json: data_position: -1 is negative");
    VERIFY_CONTAINS(error_of([&] { save(root, 4, arrays, Json{{"version", 7}}); }), "version: 7 is newer");
    const std::vector<std::pair<std::string, Tensor>> diverged = {{kKernel, Tensor({2}, std::numeric_limits<float>::quiet_NaN())}};
    VERIFY_CONTAINS(error_of([&] { save(root, 4, diverged, Json::object()); }),
                    "checkpoint of step 4: 'params/dense/kernel' element 0 is NaN: the run has diverged, and resume would refuse");
    QVERIFY(!latest(root).has_value());  // nothing was written
    for (const auto& e : fs::directory_iterator(root)) QFAIL(qPrintable("left behind: " + q(e.path())));
  }

  // ----------------------------------------------------------------------------------- BatchLoader

  void batchLoaderSeekRefusesPositionsItCannotReach() {
    data::Dataset ds;
    ds.features = filled({10, 2}, 0.0f);
    ds.targets = filled({10}, 0.0f);
    data::BatchLoader loader(ds, 4, 1, true, false);
    VERIFY_CONTAINS(error_of([&] { loader.seek(-100); }), "BatchLoader: cannot seek to position -100");
    VERIFY_CONTAINS(error_of([&] { loader.seek(std::numeric_limits<int64_t>::max()); }),
                    "cannot seek to position 9223372036854775807 (positions are 0 .. 9007199254740992)");
    loader.seek(data::BatchLoader::kMaxPosition);  // far, but reachable: epoch 2^53 / 3
    const data::Batch far = loader.next();
    QCOMPARE(far.epoch * 3 + far.index, data::BatchLoader::kMaxPosition);
    loader.seek(7);
    const data::Batch b = loader.next();
    QCOMPARE(b.epoch, int64_t(2));
    QCOMPARE(b.index, int64_t(1));
  }

  // The crash of the issue: data_position 2^63-1 reached the prefetch thread. It is now refused at
  // the resume, by the CLI, with one line and exit 1.
  void resumeWithAHugeDataPositionIsRefusedByTheCli() {
    QTemporaryDir dir;
    const QString project = dir.filePath("p.shardlab.json");
    std::ofstream(project.toStdString()) << R"({
      "format": "shardlab.project", "version": 1, "name": "small",
      "graph": {"nodes": [{"name": "x", "type": "Input", "params": {"shape": [16]}},
                          {"name": "dense", "type": "Dense", "params": {"features": 10}}],
                "edges": [{"from": "x.out", "to": "dense.in"}]},
      "loss": {"type": "mean_squared_error", "output": "dense"},
      "optimizer": {"type": "adam", "learning_rate": 0.1},
      "data": {"type": "synthetic", "kind": "ones", "feature_shape": [16], "target_shape": [10], "examples": 32},
      "training": {"batch_size": 8, "steps": 4, "eval": false}})";
    const QString ckpts = dir.filePath("ckpt");
    const Cli first = run_cli({"train", project, "--checkpoint-dir", ckpts, "--steps", "2"});
    QVERIFY2(first.exit_code == 0, qPrintable(first.err));
    const fs::path meta = fs::path(ckpts.toStdString()) / "step_000002" / kMetaFile;
    std::string text = read_all(meta);
    const size_t at = text.find("\"data_position\": 2");
    QVERIFY(at != std::string::npos);
    text.replace(at, 18, "\"data_position\": 9223372036854775807");
    write_all(meta, text);
    const Cli r = run_cli({"train", project, "--checkpoint-dir", ckpts, "--resume"});
    verify_refused(r, q(meta) + ": data_position: 9223372036854775807 is over the limit");
  }

  // ------------------------------------------------------------- readers as strict as resume

  // Each corruption is refused alike by resume (load), inspect and both exports, with the file and
  // the reason named: none reads a checkpoint that resume would not.
  void readersRefuseWhatResumeRefuses_data() {
    QTest::addColumn<QString>("damage");
    QTest::addColumn<QString>("reason");
    QTest::newRow("a tensor's name altered") << "rename" << "(a tensor's name was altered?)";
    QTest::newRow("a checksum of no tensor") << "stale" << "is the checksum of a tensor the file does not hold";
    QTest::newRow("data_position edited") << "position" << "(the file was changed after the checkpoint was committed)";
    QTest::newRow("a key of checkpoint.json twice") << "duplicate" << "duplicate key \"seed\"";
    QTest::newRow("NaN under a recomputed checksum") << "nan" << "is NaN (the run had diverged";
    QTest::newRow("the tensors of another step") << "swap" << "does not match checkpoint.json's step 6";
    QTest::newRow("another tool's tensor file") << "foreign" << "the file was replaced by another tool's?";
    QTest::newRow("a metadata key added") << "added" << "(the header was edited after the checkpoint was committed)";
  }
  void readersRefuseWhatResumeRefuses() {
    QFETCH(QString, damage);
    QFETCH(QString, reason);
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    const fs::path ckpt = make_checkpoint(root / "ckpts");
    const fs::path model = ckpt / kSingleFile, meta = ckpt / kMetaFile;
    if (damage == "rename") {
      Parts p = split(model);
      Json renamed = Json::object();
      for (auto& [k, v] : p.header.items()) renamed[k == kKernel ? std::string("params/dense/kernal") : k] = v;
      p.header = renamed;
      join(model, p);
    } else if (damage == "stale") {
      Parts p = split(model);
      p.header["__metadata__"]["crc32c.params/ghost"] = p.header["__metadata__"]["crc32c." + kKernel];
      join(model, p);
    } else if (damage == "position") {
      std::string text = read_all(meta);
      const size_t at = text.find("\"data_position\": 6");
      QVERIFY(at != std::string::npos);
      text.replace(at, 18, "\"data_position\": 5");  // valid, and not what was saved
      write_all(meta, text);
    } else if (damage == "duplicate") {
      std::string text = read_all(meta);
      text.insert(text.find('{') + 1, "\n  \"seed\": 4,");
      write_all(meta, text);
    } else if (damage == "foreign") {
      Parts p = split(model);
      p.header.erase("__metadata__");  // the same tensors, as another tool writes them
      join(model, p);
    } else if (damage == "added") {
      Parts p = split(model);
      p.header["__metadata__"]["note"] = "edited";  // every tensor and its checksum left as they were
      join(model, p);
    } else if (damage == "nan") {
      set_first_element(model, kKernel, std::numeric_limits<float>::quiet_NaN());
    } else {
      const fs::path other = make_checkpoint(root / "other", 4);
      fs::copy_file(other / kSingleFile, model, fs::copy_options::overwrite_existing);
    }
    const auto before = snapshot(root);
    VERIFY_CONTAINS(error_of([&] { load(ckpt); }), reason);
    verify_refused(run_cli({"inspect", q(ckpt)}), reason);
    verify_refused(run_cli({"export", q(ckpt), "--out", q(root / "out.safetensors")}), reason);
    const Cli onnx = run_cli({"export", q(ckpt), "--format", "onnx", "--out", q(root / "out.onnx")});
    if (!onnx.err.contains("ONNX")) verify_refused(onnx, reason);  // a build without ONNX says so first
    QCOMPARE(snapshot(root), before);  // nothing written, nothing changed
  }

  // A checkpoint's COMMITTED marker records the checksums of checkpoint.json (and of a sharded
  // model's index) and of each tensor file's header; a marker of "committed" alone, as saves before it wrote, still loads.
  void theCommitMarkerRecordsTheSmallFiles() {
    QTemporaryDir dir;
    const fs::path ckpt = make_checkpoint(fs::path(dir.path().toStdString()) / "a");
    VERIFY_CONTAINS(QString::fromStdString(read_all(ckpt / kCommitFile)), "crc32c checkpoint.json ");
    const fs::path sharded = make_checkpoint(fs::path(dir.path().toStdString()) / "b", 6, 48);
    VERIFY_CONTAINS(QString::fromStdString(read_all(sharded / kCommitFile)), QString("crc32c ") + kIndexFile + " ");
    write_all(ckpt / kCommitFile, "committed\n");
    QCOMPARE(load(ckpt).step, int64_t(6));
    VERIFY_CONTAINS(QString::fromStdString(read_all(sharded / kCommitFile)), "crc32c-header model-00001-of-");
    write_all(ckpt / kCommitFile, "committed\ncrc32c ../../etc/passwd 00000000\n");
    VERIFY_CONTAINS(error_of([&] { load(ckpt); }), "unreadable line");
  }

  // ------------------------------------------------------------------------ what train writes

  // --log and --trace go only to a regular file or a new name outside any checkpoint directory;
  // anything else is refused before training starts, and nothing on disk changes.
  void trainWritesItsLogAndTraceOnlyWhereItShould_data() {
    QTest::addColumn<QString>("option");
    QTest::addColumn<QString>("target");
    QTest::addColumn<QString>("reason");
    for (const char* option : {"--log", "--trace"}) {
      const QString o(option);
      QTest::newRow(qPrintable(o + " over a committed tensor file")) << o << "ckpt/step_000002/model.safetensors" << "lies in the checkpoint directory";
      QTest::newRow(qPrintable(o + " over checkpoint.json")) << o << "ckpt/step_000002/checkpoint.json" << "lies in the checkpoint directory";
      QTest::newRow(qPrintable(o + " over COMMITTED")) << o << "ckpt/step_000002/COMMITTED" << "lies in the checkpoint directory";
      QTest::newRow(qPrintable(o + " over run.json")) << o << "ckpt/run.json" << "is a name the checkpoint writer uses";
      QTest::newRow(qPrintable(o + " over .lock")) << o << "ckpt/.lock" << "is a name the checkpoint writer uses";
      QTest::newRow(qPrintable(o + " as a new file in a step")) << o << "ckpt/step_000002/train.jsonl" << "lies in the checkpoint directory";
      QTest::newRow(qPrintable(o + " where a step directory goes")) << o << "ckpt/step_000009" << "is a name the checkpoint writer uses";
      QTest::newRow(qPrintable(o + " through a symlink")) << o << "link" << "is a symbolic link";
      QTest::newRow(qPrintable(o + " through a dangling symlink")) << o << "dangling" << "is a symbolic link";
      QTest::newRow(qPrintable(o + " onto a FIFO")) << o << "fifo" << "is a FIFO";
      QTest::newRow(qPrintable(o + " onto a directory")) << o << "adir" << "is a directory";
      QTest::newRow(qPrintable(o + " onto a device")) << o << "device" << "is a character device";
    }
  }
  void trainWritesItsLogAndTraceOnlyWhereItShould() {
    QFETCH(QString, option);
    QFETCH(QString, target);
    QFETCH(QString, reason);
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    const QString project = dir.filePath("p.shardlab.json");
    write_small_project(project);
    const Cli first = run_cli({"train", project, "--checkpoint-dir", dir.filePath("ckpt"), "--steps", "2"});
    QVERIFY2(first.exit_code == 0, qPrintable(first.err));
    write_all(root / "victim", "precious");
    fs::create_symlink(root / "victim", root / "link");
    fs::create_symlink(root / "nowhere", root / "dangling");
    QCOMPARE(::mkfifo((root / "fifo").c_str(), 0644), 0);
    fs::create_directory(root / "adir");
    // /dev/null's numbers; making a device node needs root.
    if (target == "device" && ::mknod((root / "device").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
      QSKIP("making a device node needs root; the other targets are checked");
    const auto before = snapshot(root);
    const Cli r = run_cli({"train", project, "--checkpoint-dir", dir.filePath("ckpt"), "--steps", "4", "--resume", option,
                           dir.filePath(target)});
    verify_refused(r, reason);
    VERIFY_CONTAINS(r.err, option + " " + dir.filePath(target));
    QCOMPARE(snapshot(root), before);  // the target untouched, and no step trained or saved
  }

  // A log on a file system that fills up: the run stops with an error naming the log, which ends
  // at its last whole line.
  void aFullDiskStopsTheRunAndKeepsTheLogWhole() {
    QTemporaryDir dir;
    const QString mnt = dir.filePath("small");
    fs::create_directory(mnt.toStdString());
    if (::geteuid() != 0) QSKIP("mounting a small tmpfs needs root");
    const QString mount = QString("mount -t tmpfs -o size=16k tmpfs '%1'").arg(mnt);
    if (std::system(mount.toUtf8().constData()) != 0) QSKIP("this machine does not allow mounting a tmpfs here");
    struct Unmount {
      QString at;
      ~Unmount() { std::system(QString("umount '%1'").arg(at).toUtf8().constData()); }
    } unmount{mnt};
    const QString project = dir.filePath("p.shardlab.json");
    write_small_project(project);
    const QString log = mnt + "/run.jsonl";
    const Cli r = run_cli({"train", project, "--steps", "2000", "--log", log, "--quiet"});
    QCOMPARE(r.exit_code, 1);
    VERIFY_CONTAINS(r.err, log + ": writing failed");
    const std::string text = read_all(log.toStdString());
    QVERIFY(!text.empty());
    QCOMPARE(text.back(), '\n');
    size_t lines = 0;
    for (size_t at = 0; at < text.size();) {
      const size_t end = text.find('\n', at);
      QVERIFY(Json::parse(text.substr(at, end - at)).is_object());  // every line a whole record
      ++lines;
      at = end + 1;
    }
    QVERIFY2(lines < 2000, "the log held every step: the disk never filled");
  }

  // A read-only file system (root writes through a directory's permissions, so a remounted tmpfs
  // is what stops it): each command that writes there is refused, names the path, and leaves what
  // was there as it was.
  void aReadOnlyDirectoryIsRefusedAndLeftAlone() {
    QTemporaryDir dir;
    const QString mnt = dir.filePath("ro");
    fs::create_directory(mnt.toStdString());
    if (::geteuid() != 0) QSKIP("mounting a read-only tmpfs needs root");
    if (std::system(QString("mount -t tmpfs -o size=64k tmpfs '%1'").arg(mnt).toUtf8().constData()) != 0)
      QSKIP("this machine does not allow mounting a tmpfs here");
    struct Unmount {
      QString at;
      ~Unmount() { std::system(QString("umount '%1'").arg(at).toUtf8().constData()); }
    } unmount{mnt};
    const fs::path old = (mnt + "/old.jsonl").toStdString();
    write_all(old, "kept\n");
    QCOMPARE(std::system(QString("mount -o remount,ro '%1'").arg(mnt).toUtf8().constData()), 0);
    const QString project = dir.filePath("p.shardlab.json");
    write_small_project(project);
    // A checkpoint of a real project, which the ONNX export needs.
    const QString ckpts = dir.filePath("ckpts");
    const Cli trained = run_cli({"train", project, "--steps", "2", "--quiet", "--checkpoint-dir", ckpts});
    QVERIFY2(trained.exit_code == 0, qPrintable(trained.err));
    const fs::path ckpt = fs::path(ckpts.toStdString()) / "step_000002";
    const std::vector<std::pair<QString, QStringList>> writes = {
        {"train --log", {"train", project, "--steps", "2", "--quiet", "--log", q(old)}},
        {"train --trace", {"train", project, "--steps", "2", "--quiet", "--trace", mnt + "/trace.json"}},
        {"export", {"export", q(ckpt), "--out", mnt + "/model.safetensors"}},
        {"export onnx", {"export", q(ckpt), "--format", "onnx", "--out", mnt + "/model.onnx"}},
    };
    for (const auto& [what, args] : writes) {
      const Cli r = run_cli(args);
      QVERIFY2(r.exit_code != 0, qPrintable(what + " exited 0"));
      QVERIFY2(r.err.contains(mnt), qPrintable(what + ": " + r.err));
    }
    QCOMPARE(read_all(old), std::string("kept\n"));
    QCOMPARE(int(std::distance(fs::directory_iterator(mnt.toStdString()), fs::directory_iterator{})), 1);
  }

  // ------------------------------------------------------------------------------------- export

  void exportRefusesPathsThatAreNotRegularFiles_data() {
    QTest::addColumn<QString>("target");
    QTest::addColumn<QString>("reason");
    QTest::newRow("symlink") << "symlink" << "is a symbolic link";
    QTest::newRow("directory") << "directory" << "is a directory";
    QTest::newRow("FIFO") << "fifo" << "is a FIFO";
    QTest::newRow("device node") << "device" << "is a character device";
    QTest::newRow("own model.safetensors") << "own" << "of the checkpoint being exported";
    QTest::newRow("hard link to own file") << "hardlink" << "of the checkpoint being exported";
    QTest::newRow("new file in the checkpoint") << "inside" << "lies inside the checkpoint directory";
  }
  void exportRefusesPathsThatAreNotRegularFiles() {
    QFETCH(QString, target);
    QFETCH(QString, reason);
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    const fs::path ckpt = make_checkpoint(root / "ckpts");
    const std::string model_before = read_all(ckpt / kSingleFile);
    const fs::path victim = root / "victim.safetensors";
    write_all(victim, "precious");
    fs::path out;
    if (target == "symlink") {
      out = root / "link.safetensors";
      fs::create_symlink(victim, out);
    } else if (target == "directory") {
      out = root / "adir";
      fs::create_directory(out);
    } else if (target == "fifo") {
      out = root / "fifo";
      QCOMPARE(::mkfifo(out.c_str(), 0644), 0);
    } else if (target == "device") {
      out = root / "null";
      // /dev/null's numbers; making a device node needs root.
      if (::mknod(out.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) QSKIP("mknod needs root");
    } else if (target == "own") {
      out = ckpt / kSingleFile;
    } else if (target == "hardlink") {
      out = root / "alias.safetensors";
      fs::create_hard_link(ckpt / kSingleFile, out);
    } else {
      out = ckpt / "params.safetensors";
    }
    const Cli r = run_cli({"export", q(ckpt), "--out", q(out)});
    verify_refused(r, q(out));
    VERIFY_CONTAINS(r.err, reason);
    // Nothing was replaced.
    QCOMPARE(read_all(victim), std::string("precious"));
    QCOMPARE(read_all(ckpt / kSingleFile), model_before);
    struct stat st {};
    QCOMPARE(::lstat(out.c_str(), &st) == 0, target != "inside");
    if (target == "symlink") QVERIFY(S_ISLNK(st.st_mode));
    if (target == "device") QVERIFY(S_ISCHR(st.st_mode));
    if (target == "fifo") QVERIFY(S_ISFIFO(st.st_mode));
    QVERIFY(load(ckpt).arrays.size() == 3);
  }

  void exportWritesARegularFileAtomicallyWithChecksums() {
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    const fs::path ckpt = make_checkpoint(root / "ckpts");
    const fs::path out = root / "exported.safetensors";
    write_all(out, "an older export");  // a regular file is replaced
    const Cli r = run_cli({"export", q(ckpt), "--out", q(out)});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const SafetensorsFile f = read_safetensors(out);  // verifies the checksums
    QCOMPARE(f.tensors.size(), size_t(1));
    QCOMPARE(f.tensors[0].name, std::string("dense/kernel"));
    QCOMPARE(f.metadata.at(kChecksumPrefix + "dense/kernel"), checksum_of(f.tensors[0]));
    QVERIFY(!f.metadata.count(kChecksumPrefix + kKernel));  // no stale keys of the checkpoint's names
    for (const auto& e : fs::directory_iterator(root))
      QVERIFY2(e.path().filename().string().find(".saving-") == std::string::npos, "temporary file left behind");
  }
};

QTEST_GUILESS_MAIN(TestCheckpointIntegrity)
#include "test_checkpoint_integrity.moc"
