// Element types and their conversions (engine/tensor/dtype.h, convert.h): names, the exact rounding
// of float to bfloat16 and half, the array conversions (SIMD where built) against the one-element
// ones on every 16-bit pattern, and the matmul-precision rounding.
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "engine/tensor/convert.h"
#include "engine/tensor/dtype.h"

using namespace shardlab;

class TestDtype : public QObject {
  Q_OBJECT
 private slots:
  void namesRoundTrip();
  void bf16Conversion();
  void f16Conversion();
  void f16ConversionMatchesExhaustively();
  void arrayConversionsMatchTheScalarOnes();
  void int32ConversionRoundsAndSaturates();
  void matmulPrecisionRoundsTheMantissa();
};

void TestDtype::namesRoundTrip() {
  for (DType d : {DType::F32, DType::BF16, DType::F16, DType::I32}) {
    QCOMPARE(parse_dtype(dtype_name(d)), std::optional<DType>(d));
    QCOMPARE(parse_dtype(dtype_short(d)), std::optional<DType>(d));
  }
  QCOMPARE(dtype_size(DType::BF16), size_t(2));
  QCOMPARE(dtype_size(DType::I32), size_t(4));
  QVERIFY(!parse_dtype("float64"));
  QVERIFY(!parse_dtype("Float32"));
  QCOMPARE(parse_matmul_precision("tensorfloat32"), std::optional<MatmulPrecision>(MatmulPrecision::Tf32));
  QCOMPARE(parse_matmul_precision("highest"), std::optional<MatmulPrecision>(MatmulPrecision::Highest));
  QVERIFY(!parse_matmul_precision("fast"));
}

void TestDtype::bf16Conversion() {
  QCOMPARE(float_to_bf16(1.0f), uint16_t(0x3F80));
  QCOMPARE(float_to_bf16(-2.5f), uint16_t(0xC020));
  QCOMPARE(float_to_bf16(3.14159f), uint16_t(0x4049));
  QCOMPARE(float_to_bf16(0.0f), uint16_t(0x0000));
  QCOMPARE(float_to_bf16(-0.0f), uint16_t(0x8000));
  QCOMPARE(float_to_bf16(std::numeric_limits<float>::infinity()), uint16_t(0x7F80));
  QCOMPARE(float_to_bf16(std::numeric_limits<float>::max()), uint16_t(0x7F80));  // rounds up to infinity
  // Ties to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 and goes down to the even 1.0;
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 and goes up.
  QCOMPARE(float_to_bf16(1.0f + 0x1p-8f), uint16_t(0x3F80));
  QCOMPARE(float_to_bf16(1.0f + 3 * 0x1p-8f), uint16_t(0x3F82));
  QCOMPARE(float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), uint16_t(0x3F81));  // just above half: up
  const uint16_t nan = float_to_bf16(std::numeric_limits<float>::quiet_NaN());
  QVERIFY((nan & 0x7F80) == 0x7F80 && (nan & 0x7F) != 0);
  // A signalling NaN whose payload lies only in the low bits must stay a NaN.
  QVERIFY(std::isnan(bf16_to_float(float_to_bf16(std::bit_cast<float>(uint32_t(0x7F800001))))));

  QCOMPARE(bf16_to_float(0x3F80), 1.0f);
  QCOMPARE(bf16_to_float(0xC020), -2.5f);
  QCOMPARE(bf16_to_float(0x4049), 3.140625f);
  // Every bf16 survives float and back.
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float f = bf16_to_float(uint16_t(h));
    if (std::isnan(f)) continue;
    QCOMPARE(float_to_bf16(f), uint16_t(h));
  }
}

void TestDtype::f16Conversion() {
  QCOMPARE(float_to_f16(1.0f), uint16_t(0x3C00));
  QCOMPARE(float_to_f16(-2.5f), uint16_t(0xC100));
  QCOMPARE(float_to_f16(65504.0f), uint16_t(0x7BFF));
  QCOMPARE(float_to_f16(65519.99f), uint16_t(0x7BFF));
  QCOMPARE(float_to_f16(65520.0f), uint16_t(0x7C00));  // halfway to 65536: ties to even, which is infinity
  QCOMPARE(float_to_f16(-1e10f), uint16_t(0xFC00));
  QCOMPARE(float_to_f16(0.1f), uint16_t(0x2E66));
  QCOMPARE(float_to_f16(3.14159f), uint16_t(0x4248));
  QCOMPARE(float_to_f16(-0.0f), uint16_t(0x8000));
  QCOMPARE(float_to_f16(0x1p-14f), uint16_t(0x0400));               // smallest normal
  QCOMPARE(float_to_f16(0x1p-24f), uint16_t(0x0001));               // smallest subnormal
  QCOMPARE(float_to_f16(0x1p-25f), uint16_t(0x0000));               // half of it: ties to even, 0
  QCOMPARE(float_to_f16(0x1p-25f * 1.0001f), uint16_t(0x0001));     // just above half: up
  QCOMPARE(float_to_f16(3 * 0x1p-25f), uint16_t(0x0002));           // 1.5 ulp: ties to even, 2
  QCOMPARE(float_to_f16(0x1p-14f - 0x1p-26f), uint16_t(0x0400));    // rounds up into the normals
  QCOMPARE(float_to_f16(1.0f + 0x1p-11f), uint16_t(0x3C00));        // tie, down to even
  QCOMPARE(float_to_f16(1.0f + 3 * 0x1p-11f), uint16_t(0x3C02));    // tie, up to even
  QCOMPARE(float_to_f16(1e-30f), uint16_t(0x0000));
  QCOMPARE(float_to_f16(std::numeric_limits<float>::denorm_min()), uint16_t(0x0000));
  const uint16_t nan = float_to_f16(-std::numeric_limits<float>::quiet_NaN());
  QVERIFY((nan & 0x7C00) == 0x7C00 && (nan & 0x3FF) != 0 && (nan & 0x8000));
  QVERIFY(std::isnan(f16_to_float(float_to_f16(std::bit_cast<float>(uint32_t(0x7F800001))))));

  QCOMPARE(f16_to_float(0x3C00), 1.0f);
  QCOMPARE(f16_to_float(0xC100), -2.5f);
  QCOMPARE(f16_to_float(0x7BFF), 65504.0f);
  QCOMPARE(f16_to_float(0x0001), 0x1p-24f);
  QCOMPARE(f16_to_float(0x83FF), -1023 * 0x1p-24f);
  QCOMPARE(f16_to_float(0x7C00), std::numeric_limits<float>::infinity());
  QVERIFY(std::isnan(f16_to_float(0x7E00)));
}

// float_to_f16 against a slow, obviously right reference: the nearest of all finite halves (ties to
// the even bit pattern), on every half, every midpoint between neighbours and points just beside them.
void TestDtype::f16ConversionMatchesExhaustively() {
  for (uint32_t h = 0; h <= 0x7FFF; ++h) {
    const float f = f16_to_float(uint16_t(h));
    if (std::isnan(f)) continue;
    QCOMPARE(float_to_f16(f), uint16_t(h));
    QCOMPARE(float_to_f16(-f), uint16_t(h | 0x8000));
    if (h >= 0x7C00) continue;
    const double lo = f, hi = h + 1 == 0x7C00 ? 65536.0 : double(f16_to_float(uint16_t(h + 1)));
    const float mid = float((lo + hi) / 2);  // exact in float
    const uint16_t even = (h & 1) ? uint16_t(h + 1) : uint16_t(h);
    QCOMPARE(float_to_f16(mid), even);
    QCOMPARE(float_to_f16(std::nextafter(mid, 0.0f)), uint16_t(h));
    QCOMPARE(float_to_f16(std::nextafter(mid, 1e30f)), uint16_t(h + 1));
  }
}

// The array forms (8 at a time through AVX2/F16C where built, with a scalar tail) give the same
// bits as the one-element forms, for every 16-bit pattern and for random floats around each edge.
void TestDtype::arrayConversionsMatchTheScalarOnes() {
  std::vector<uint16_t> all(65536 + 3);  // not a multiple of 8: the tail runs too
  for (size_t h = 0; h < all.size(); ++h) all[h] = uint16_t(h);
  for (DType d : {DType::BF16, DType::F16}) {
    std::vector<float> wide(all.size());
    to_float(all.data(), d, wide.data(), all.size());
    for (size_t h = 0; h < all.size(); ++h) {
      const float one = d == DType::BF16 ? bf16_to_float(all[h]) : f16_to_float(all[h]);
      if (std::isnan(one)) {  // F16C quiets a signalling NaN; either is a NaN of the same sign
        QVERIFY(std::isnan(wide[h]) && std::signbit(wide[h]) == std::signbit(one));
        continue;
      }
      QCOMPARE(std::bit_cast<uint32_t>(wide[h]), std::bit_cast<uint32_t>(one));
    }
  }
  std::mt19937 rng(7);
  std::vector<float> x;
  for (int i = 0; i < 100003; ++i) x.push_back(std::bit_cast<float>(uint32_t(rng())));
  for (float v : {0.f, -0.f, 65504.f, 65520.f, 65519.99f, 0x1p-24f, 0x1p-25f, 1.0f + 0x1p-8f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::quiet_NaN(),
                  std::bit_cast<float>(uint32_t(0x7F800001)), std::numeric_limits<float>::max()})
    x.push_back(v);
  for (DType d : {DType::BF16, DType::F16}) {
    std::vector<uint16_t> narrow(x.size());
    from_float(x.data(), narrow.data(), d, x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const uint16_t one = d == DType::BF16 ? float_to_bf16(x[i]) : float_to_f16(x[i]);
      if (std::isnan(x[i])) {
        // Any quiet NaN of the same sign will do (F16C keeps more of the payload).
        const float back = d == DType::BF16 ? bf16_to_float(narrow[i]) : f16_to_float(narrow[i]);
        QVERIFY(std::isnan(back));
        QCOMPARE(std::signbit(back), std::signbit(x[i]));
        continue;
      }
      if (narrow[i] != one) QFAIL(qPrintable(QString("%1 of %2: %3, one at a time %4").arg(dtype_name(d)).arg(double(x[i])).arg(narrow[i]).arg(one)));
    }
  }
  // Through double (the tests' executor) and back.
  std::vector<double> dbl(all.size());
  to_float(all.data(), DType::BF16, dbl.data(), all.size());
  std::vector<uint16_t> back(all.size());
  from_float(dbl.data(), back.data(), DType::BF16, all.size());
  for (size_t h = 0; h < all.size(); ++h)
    if (!std::isnan(dbl[h])) QCOMPARE(back[h], all[h]);
}

void TestDtype::int32ConversionRoundsAndSaturates() {
  const std::vector<float> x{0.f, 3.f, -7.f, 2.5f, 3.5f, 1e12f, -1e12f, std::numeric_limits<float>::quiet_NaN()};
  std::vector<int32_t> i(x.size());
  from_float(x.data(), i.data(), DType::I32, x.size());
  QCOMPARE(i, (std::vector<int32_t>{0, 3, -7, 2, 4, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(), 0}));
  std::vector<float> back(i.size());
  to_float(i.data(), DType::I32, back.data(), i.size());
  QCOMPARE(back[2], -7.f);
}

void TestDtype::matmulPrecisionRoundsTheMantissa() {
  // tf32 keeps 10 mantissa bits: 1 + 2^-10 stays, 1 + 2^-11 is a tie and goes to the even 1,
  // 1 + 3 * 2^-11 goes up; bf16 keeps 7 and agrees with float_to_bf16 everywhere.
  QCOMPARE(round_to_tf32(1.0f + 0x1p-10f), 1.0f + 0x1p-10f);
  QCOMPARE(round_to_tf32(1.0f + 0x1p-11f), 1.0f);
  QCOMPARE(round_to_tf32(1.0f + 3 * 0x1p-11f), 1.0f + 0x1p-9f);
  QCOMPARE(round_to_tf32(-3.0f), -3.0f);
  QVERIFY(std::isinf(round_to_tf32(std::numeric_limits<float>::infinity())));
  QVERIFY(std::isnan(round_to_tf32(std::numeric_limits<float>::quiet_NaN())));
  std::mt19937 rng(3);
  for (int i = 0; i < 100000; ++i) {
    const float v = std::bit_cast<float>(uint32_t(rng()));
    if (std::isnan(v)) continue;
    QCOMPARE(std::bit_cast<uint32_t>(round_to_bf16(v)), uint32_t(float_to_bf16(v)) << 16);
  }
  std::vector<float> y{1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 0.1f};
  round_for_matmul(y.data(), y.size(), MatmulPrecision::Tf32);
  QCOMPARE(y[0], 1.0f);
  QCOMPARE(y[1], 1.0f + 0x1p-9f);
  std::vector<float> z{0.1f};
  round_for_matmul(z.data(), 1, MatmulPrecision::Highest);
  QCOMPARE(z[0], 0.1f);
}

QTEST_APPLESS_MAIN(TestDtype)
#include "test_dtype.moc"
