// A problem found before anything runs, as data: what kind it is, which nodes, arrays and project
// field it concerns, the sentence a person reads, and what would fix it. The editor marks nodes and
// fields from these fields, never by searching the sentence, so rewording a message breaks nothing.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace shardlab {

enum class Severity { Error, Warning };

struct Diagnostic {
  Severity severity = Severity::Error;
  // Stable, for code and tests: "graph.node", "graph.structure", "graph.cycle", "loss.output",
  // "mesh", "rules.unknown_axis", "layout.indivisible", "layout.array", "layout.no_rule",
  // "layout.unused_axis", "layout.replicated", "memory", "data", "devices.shared_cores".
  std::string code;
  std::vector<std::string> nodes;   // node paths at fault ("dense1", "blocks/W1"); the first is the main one
  std::vector<std::string> arrays;  // arrays it concerns ("dense1/kernel", an activation "dense1")
  std::string field;                // the project field at fault ("loss.output", "mesh", "logical_axis_rules")
  std::string message;              // the whole sentence, as shardlab-cli prints it
  std::string reason;               // the sentence without its "node '...': " lead, for showing on the node
  std::string fix;                  // what would fix it, "" when nothing short can be said
};

// A problem whose sentence names no node of its own (so its reason is its message); the caller adds
// the nodes and arrays it concerns.
inline Diagnostic make_diagnostic(Severity severity, std::string code, std::string field, std::string message,
                                  std::string fix = {}) {
  Diagnostic d;
  d.severity = severity;
  d.code = std::move(code);
  d.field = std::move(field);
  d.reason = message;
  d.message = std::move(message);
  d.fix = std::move(fix);
  return d;
}

}  // namespace shardlab
