// Helpers shared by the Qt Test suites: catching an engine error's message and checking it.
#pragma once

#include <QString>
#include <QtTest>
#include <exception>
#include <functional>

#include "engine/util/error.h"

namespace shardlab::testing {

// The message of the shardlab::Error that f throws, or an empty string if it throws none. Any other
// exception is reported as such, so a check for the expected message fails and shows it.
inline QString error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return QString::fromStdString(e.what());
  } catch (const std::exception& e) {
    return QString("<not a shardlab::Error: %1>").arg(e.what());
  }
  return {};
}

}  // namespace shardlab::testing

// Every fragment must be in the text; the text is printed when one is not.
// Peak-memory comparisons with the plan mean nothing under AddressSanitizer or ThreadSanitizer:
// their shadow memory, redzones and quarantine add to every allocation (tests/sanitizers/run.sh
// builds with them).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kUnderSanitizer = true;
#else
inline constexpr bool kUnderSanitizer = false;
#endif

#define VERIFY_CONTAINS(text, fragment) \
  QVERIFY2(QString(text).contains(fragment), qPrintable(QString("\"%1\" lacks \"%2\"").arg(QString(fragment), QString(text))))
#define VERIFY_LACKS(text, fragment) \
  QVERIFY2(!QString(text).contains(fragment), qPrintable(QString("\"%1\" has \"%2\"").arg(QString(text), QString(fragment))))
