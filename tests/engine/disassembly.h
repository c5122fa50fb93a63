// Reading machine code with binutils, for the tests that check which instructions a build holds:
// only the AVX-512 GEMM unit may hold AVX-512 code (test_gemm), the start-up CPU check holds no
// instruction beyond baseline x86-64 (test_cpu_baseline_check), and the packaged binaries keep to
// both (test_package).
#pragma once

#include <QByteArray>
#include <QList>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QString>
#include <QStringList>

namespace shardlab::testing {

// Why the disassembly checks cannot run here, or empty when they can.
inline QString binutils_missing() {
  for (const char* tool : {"objdump", "nm"})
    if (QStandardPaths::findExecutable(tool).isEmpty()) return QString("%1 not found (binutils)").arg(tool);
  return {};
}

// A tool's standard output.
inline QByteArray run_tool(const QString& tool, const QStringList& args) {
  QProcess p;
  p.start(tool, args);
  p.waitForFinished(120000);
  return p.readAllStandardOutput();
}

// An instruction line using zmm or mask registers, the 16 extra vector registers, or an EVEX-only
// instruction on xmm/ymm: AVX-512 code.
inline const QRegularExpression& avx512_instruction() {
  static const QRegularExpression re(
      "[^\\n]*(%zmm|%k[0-7]\\b|%[xy]mm(1[6-9]|2[0-9]|3[01])\\b|\\bvpternlog|\\bvperm[ti]2|\\bvcvt\\w*2u[dq]q)[^\\n]*");
  return re;
}

// An instruction line beyond baseline x86-64 (SSE2): any VEX or EVEX instruction (their mnemonics
// start with v), ymm/zmm registers, BMI1/BMI2, LZCNT, MOVBE, POPCNT, or SSE3 to SSE4.2's typical
// instructions.
inline const QRegularExpression& beyond_baseline_instruction() {
  static const QRegularExpression re(
      "[^\\n]*\\t(v[a-z0-9]+|andn|bextr|blsi|blsmsk|blsr|bzhi|pdep|pext|rorx|sarx|shlx|shrx|lzcnt|tzcnt|movbe|popcnt|"
      "pshufb|palignr|ptest|pblend\\w*|pmins[bd]|pmaxs[bd]|pmovzx\\w*|pmovsx\\w*|pcmpeqq|pcmpgtq|round[sp][sd]|"
      "dpp[sd]|insertps|extractps|pinsr[bdq]|pextr[bdq]|haddp[sd]|lddqu|movddup|crc32\\w*)\\b[^\\n]*|[^\\n]*%[yz]mm[^\\n]*");
  return re;
}

// The first weak, vague-linkage or unique symbol an object defines ("" when none): the linker may
// pick such a copy of an inline or template function for the whole program, so an object built
// for other instructions than the rest must not define one.
inline QString weak_symbol(const QString& object) {
  for (const QByteArray& line : run_tool("nm", {"--defined-only", object}).split('\n')) {
    const QList<QByteArray> fields = line.simplified().split(' ');
    // DW.ref.__gxx_personality_v0 is data (a pointer to the C++ unwinder's personality routine)
    // that builds with exception cleanups in the unit emit (a ThreadSanitizer build does): no code.
    if (fields.size() >= 3 && (fields[1] == "W" || fields[1] == "V" || fields[1] == "u") && !fields[2].startsWith("DW.ref."))
      return QString(line);
  }
  return {};
}

// One function of `objdump -d` output and its instruction lines.
struct DisassembledFunction {
  QString name;
  QString code;
};

// `objdump -d --no-show-raw-insn -C` of `file`, split by function. `only` limits it to the
// functions whose (demangled) names contain it.
inline QList<DisassembledFunction> disassemble(const QString& file, const QString& only = {}) {
  static const QRegularExpression header("^[0-9a-f]+ <(.*)>:$");
  QList<DisassembledFunction> functions;
  const QStringList lines = QString::fromLatin1(run_tool("objdump", {"-d", "-C", "--no-show-raw-insn", file})).split('\n');
  for (const QString& line : lines) {
    const QRegularExpressionMatch m = header.match(line);
    if (m.hasMatch()) functions.push_back({m.captured(1), {}});
    else if (!functions.isEmpty()) functions.back().code += line + '\n';
  }
  if (!only.isEmpty()) functions.removeIf([&](const DisassembledFunction& f) { return !f.name.contains(only); });
  return functions;
}

}  // namespace shardlab::testing
