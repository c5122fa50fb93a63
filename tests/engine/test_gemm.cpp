// Every float GEMM kernel this CPU can run computes op(A) @ op(B) like a double-precision reference,
// for odd shapes, both transposes and padded rows, writes every element of C and nothing beyond,
// and gives the same bits with an epilogue folded in as with the epilogue applied afterwards.
#include <QtTest>
#include <QDirIterator>
#include <QFile>
#include <QProcess>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "engine/backends/cpu/gemm.h"
#include "tests/engine/disassembly.h"
#include "tests/engine/test_support.h"

using namespace shardlab::backends::cpu;
using namespace shardlab::testing;
using shardlab::testing::error_of;

namespace {

struct Shape {
  int64_t m, n, k;
};
// Edge tiles in both directions, more than one k block (256 for AVX2, 512 for AVX-512), more than
// one A block (144 / 240 rows), and products large enough to be split over threads.
const Shape kShapes[] = {{1, 1, 1},     {7, 13, 33},   {13, 7, 1},    {33, 100, 13},  {100, 33, 7},
                         {1, 100, 600}, {100, 1, 300}, {6, 16, 256},  {12, 32, 512},  {300, 70, 513},
                         {67, 257, 259}, {250, 97, 40}, {145, 48, 1030}};

struct Epilogues {
  const char* name;
  bool bias, relu, mask;
};
const Epilogues kEpilogues[] = {{"none", false, false, false}, {"bias", true, false, false},
                                {"bias+relu", true, true, false}, {"relu", false, true, false},
                                {"mask", false, false, true}, {"bias+relu+mask", true, true, true}};

// One product with its operands stored as the kernel will read them: A is m x k (k x m when
// transposed) with `pad` unused floats after each row, likewise B and C.
struct Problem {
  bool ta, tb;
  int64_t m, n, k, lda, ldb, ldc;
  std::vector<float> a, b, bias, mask;

  Problem(bool ta_, bool tb_, Shape s, int64_t pad, uint32_t seed) : ta(ta_), tb(tb_), m(s.m), n(s.n), k(s.k) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    lda = (ta ? m : k) + pad;
    ldb = (tb ? k : n) + pad;
    ldc = n + pad;
    a.resize(size_t((ta ? k : m) * lda));
    b.resize(size_t((tb ? n : k) * ldb));
    bias.resize(size_t(n));
    mask.resize(size_t(m * ldc));
    for (float& x : a) x = u(rng);
    for (float& x : b) x = u(rng);
    for (float& x : bias) x = u(rng);
    for (float& x : mask) x = float(int(rng() % 3) - 1);  // -1, 0 or 1: zero must count as "not > 0"
  }
  float at_a(int64_t i, int64_t p) const { return ta ? a[size_t(p * lda + i)] : a[size_t(i * lda + p)]; }
  float at_b(int64_t p, int64_t j) const { return tb ? b[size_t(j * ldb + p)] : b[size_t(p * ldb + j)]; }
  Epilogue<float> epilogue(const Epilogues& e) const {
    Epilogue<float> out;
    if (e.bias) out.bias = bias.data();
    out.relu = e.relu;
    if (e.mask) out.mask = mask.data();
    return out;
  }
  // C poisoned with NaN, so an element the kernel forgets to write (or reads before writing) shows.
  std::vector<float> poisoned_c() const { return std::vector<float>(size_t(m * ldc), std::numeric_limits<float>::quiet_NaN()); }
  std::vector<float> run(GemmKernel kernel, const Epilogue<float>& e) const {
    std::vector<float> c = poisoned_c();
    gemm_with(kernel, ta, tb, m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc, e);
    return c;
  }
};

// The epilogue in float, as the unfused executor applies it after the product.
void apply_after(const Problem& p, const Epilogue<float>& e, std::vector<float>& c) {
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      float v = c[size_t(i * p.ldc + j)];
      if (e.bias) v += e.bias[j];
      if (e.relu) v = v > 0.f ? v : 0.f;
      if (e.mask) v = e.mask[i * p.ldc + j] > 0.f ? v : 0.f;
      c[size_t(i * p.ldc + j)] = v;
    }
}

// Compares with the double reference (float rounding bounded by k * eps * sum |a b|) and checks the
// padding after each row of C was left alone. Empty on success, else the first mismatch.
QString check_against_reference(const Problem& p, const Epilogue<float>& e, const std::vector<float>& c) {
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double ref = 0, mag = 0;
      for (int64_t q = 0; q < p.k; ++q) {
        const double t = double(p.at_a(i, q)) * double(p.at_b(q, j));
        ref += t;
        mag += std::abs(t);
      }
      if (e.bias) ref += e.bias[j], mag += std::abs(e.bias[j]);
      if (e.relu) ref = ref > 0 ? ref : 0;
      if (e.mask && !(e.mask[i * p.ldc + j] > 0.f)) ref = 0;
      const float got = c[size_t(i * p.ldc + j)];
      const double tol = double(p.k + 2) * FLT_EPSILON * mag + 1e-30;
      if (!(std::abs(double(got) - ref) <= tol))
        return QString("C[%1, %2] = %3, reference %4 (tolerance %5)").arg(i).arg(j).arg(got).arg(ref).arg(tol);
    }
    for (int64_t j = p.n; j < p.ldc; ++j)
      if (!std::isnan(c[size_t(i * p.ldc + j)])) return QString("padding C[%1, %2] was written").arg(i).arg(j);
  }
  return {};
}

QString describe(const Problem& p, const char* epilogue) {
  return QString("m=%1 n=%2 k=%3 trans_a=%4 trans_b=%5 lda=%6 ldb=%7 ldc=%8 epilogue=%9")
      .arg(p.m).arg(p.n).arg(p.k).arg(p.ta).arg(p.tb).arg(p.lda).arg(p.ldb).arg(p.ldc).arg(epilogue);
}

bool runs_here(GemmKernel kernel) {
  for (GemmKernel k : available_kernels())
    if (k == kernel) return true;
  return false;
}

}  // namespace

class TestGemm : public QObject {
  Q_OBJECT
 private:
  static void kernel_rows() {
    QTest::addColumn<int>("kernel_id");
    for (GemmKernel k : {GemmKernel::avx512, GemmKernel::avx2, GemmKernel::eigen})
      QTest::newRow(kernel_name(k)) << int(k);
  }
  // QSKIP returns from the calling test function, so it must be expanded there.
#define FETCH_KERNEL_OR_SKIP(var)                                                                    \
  QFETCH(int, kernel_id);                                                                            \
  const GemmKernel var = GemmKernel(kernel_id);                                                      \
  if (!runs_here(var))                                                                               \
    QSKIP(qPrintable(QString("this CPU (or a non-x86 build) cannot run the '%1' kernel; gemm_kind() is '%2'") \
                         .arg(kernel_name(var), gemm_kind())));

 private slots:
  void fastestAvailableKernelIsTheOneUsed() {
    const std::vector<GemmKernel> kernels = available_kernels();
    QVERIFY(!kernels.empty());
    QCOMPARE(kernels.back(), GemmKernel::eigen);
    QCOMPARE(QString(gemm_kind()), QString(kernel_name(kernels.front())));
    qInfo("gemm_kind: %s", gemm_kind());
  }

  void kernelTheCpuLacksIsRefused() {
    for (GemmKernel k : {GemmKernel::avx512, GemmKernel::avx2}) {
      if (runs_here(k)) continue;
      float a = 1, b = 1, c = 0;
      VERIFY_CONTAINS(error_of([&] { gemm_with(k, false, false, 1, 1, 1, &a, 1, &b, 1, &c, 1); }), "cannot run");
    }
  }

  void matchesDoubleReference_data() { kernel_rows(); }
  void matchesDoubleReference() {
    FETCH_KERNEL_OR_SKIP(kernel);
    uint32_t seed = 1;
    for (const Shape& s : kShapes)
      for (int t = 0; t < 4; ++t)
        for (int64_t pad : {0, 5}) {
          const Problem p(t & 1, t & 2, s, pad, seed++);
          const QString error = check_against_reference(p, {}, p.run(kernel, {}));
          QVERIFY2(error.isEmpty(), qPrintable(describe(p, "none") + ": " + error));
        }
  }

  void appliesEachEpilogue_data() { kernel_rows(); }
  void appliesEachEpilogue() {
    FETCH_KERNEL_OR_SKIP(kernel);
    uint32_t seed = 100;
    for (const Shape& s : kShapes)
      for (const Epilogues& ep : kEpilogues) {
        const Problem p(seed % 2, seed % 3 == 0, s, 3, seed);
        ++seed;
        const Epilogue<float> e = p.epilogue(ep);
        const std::vector<float> fused = p.run(kernel, e);
        const QString error = check_against_reference(p, e, fused);
        QVERIFY2(error.isEmpty(), qPrintable(describe(p, ep.name) + ": " + error));
        // Folding the epilogue into the store must not change a bit (test_fusion relies on it).
        std::vector<float> unfused = p.run(kernel, {});
        apply_after(p, e, unfused);
        QVERIFY2(std::memcmp(fused.data(), unfused.data(), fused.size() * sizeof(float)) == 0,
                 qPrintable(describe(p, ep.name) + ": fused and unfused epilogues differ"));
      }
  }

  void zeroDepthGivesTheEpilogueOfZero_data() { kernel_rows(); }
  void zeroDepthGivesTheEpilogueOfZero() {
    FETCH_KERNEL_OR_SKIP(kernel);
    for (const Epilogues& ep : kEpilogues) {
      const Problem p(false, false, {9, 21, 0}, 2, 7);
      const Epilogue<float> e = p.epilogue(ep);
      const QString error = check_against_reference(p, e, p.run(kernel, e));
      QVERIFY2(error.isEmpty(), qPrintable(describe(p, ep.name) + ": " + error));
    }
  }

  // The runtime calls gemm from several device threads at once; each must get its own pack buffers.
  void concurrentCallsDoNotInterfere_data() { kernel_rows(); }
  void concurrentCallsDoNotInterfere() {
    FETCH_KERNEL_OR_SKIP(kernel);
    std::vector<Problem> problems;
    for (uint32_t i = 0; i < 4; ++i) problems.emplace_back(i % 2, i / 2, Shape{90 + 7 * i, 150 - 11 * i, 300 + 13 * i}, i, 500 + i);
    std::vector<std::vector<float>> expected, got(problems.size());
    for (const Problem& p : problems) expected.push_back(p.run(kernel, {}));
    std::vector<std::thread> threads;
    for (size_t i = 0; i < problems.size(); ++i)
      threads.emplace_back([&, i] {
        for (int rep = 0; rep < 5; ++rep) got[i] = problems[i].run(kernel, {});
      });
    for (std::thread& t : threads) t.join();
    for (size_t i = 0; i < problems.size(); ++i)
      QVERIFY2(std::memcmp(got[i].data(), expected[i].data(), got[i].size() * sizeof(float)) == 0,
               qPrintable(describe(problems[i], "none") + ": differs when run concurrently"));
  }

  // A binary built here must run on any x86-64-v3 CPU: only gemm_avx512.cpp may hold AVX-512
  // instructions, and it must not define an inline or template function the linker could pick as the
  // program's copy (nm's weak symbols), so nothing outside it runs AVX-512 code by accident.
  void onlyTheAvx512UnitHoldsAvx512Code() {
    const QString objects = QString(SHARDLAB_BINARY_DIR) + "/engine/CMakeFiles/shardlab_engine.dir";
    QFile cache(QString(SHARDLAB_BINARY_DIR) + "/CMakeCache.txt");
    if (cache.open(QIODevice::ReadOnly) && cache.readAll().contains("SHARDLAB_NATIVE:BOOL=ON"))
      QSKIP("SHARDLAB_NATIVE=ON: the whole engine targets this machine's CPU");
    if (const QString missing = binutils_missing(); !missing.isEmpty()) QSKIP(qPrintable(missing));
    if (!QFileInfo(objects).isDir()) QSKIP(qPrintable("no engine objects at " + objects));
    int checked = 0;
    for (QDirIterator it(objects, {"*.o"}, QDir::Files, QDirIterator::Subdirectories); it.hasNext();) {
      const QString object = it.next();
      if (object.endsWith("/backends/cpu/gemm_avx512.cpp.o")) {
        const QString weak = weak_symbol(object);
        QVERIFY2(weak.isEmpty(), qPrintable("gemm_avx512.cpp.o defines a weak or unique symbol: " + weak));
        continue;
      }
      ++checked;
      const QRegularExpressionMatch hit =
          avx512_instruction().match(QString::fromLatin1(run_tool("objdump", {"-d", "--no-show-raw-insn", object})));
      QVERIFY2(!hit.hasMatch(), qPrintable(object + " holds AVX-512 code: " + hit.captured(0)));
    }
    QVERIFY(checked > 0);
  }
};

QTEST_APPLESS_MAIN(TestGemm)
#include "test_gemm.moc"
