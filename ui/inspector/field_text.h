// How the inspector turns a layer field's stored JSON into the text a person edits ("28, 28",
// "batch, embed", "0.5") and typed text back into the value to store, with the reason when the
// text is refused. No widgets here, so the rules are the same for every editor that uses them.
#pragma once

#include <QString>
#include <QStringList>
#include <string>
#include <vector>

#include "engine/api/engine.h"

namespace shardlab::ui::fieldtext {

// The outcome of reading typed text: the value to store (null: remove the key, the field goes back
// to its default) or, when `error` is set, why the text was refused.
struct Parsed {
  graph::Json value;
  QString error;
  bool ok() const { return error.isEmpty(); }
};

// A stored value as editor text; a value of an unexpected kind shows as its JSON.
QString format(const graph::FieldInfo& f, const graph::Json& value);
// Reads text for a line-edited field (Int, Number, String, IntList, NameList). Empty text is the
// default for an optional field and an error for a required one. Errors start with the field's key.
Parsed parse(const graph::FieldInfo& f, const QString& text);
// A value equal to an optional field's default becomes null, so files keep only what differs.
graph::Json normalize(const graph::FieldInfo& f, const graph::Json& value);

// "embed, mlp" <-> {"embed", "mlp"}. Names are separated by commas; each must be non-empty and
// without spaces. `what` names the editor in the error ("kernel axes").
bool parseNames(const QString& text, const QString& what, std::vector<std::string>* out, QString* error);
QString joinNames(const std::vector<std::string>& names);
std::vector<std::string> namesOf(const graph::Json& j);  // a JSON list of strings; anything else gives {}

// The initializers a field of kind Init offers, in menu order.
const QStringList& initializerNames();
inline constexpr double kDefaultNormalStddev = 0.02;

// "200,960"; "51.4 M"; for the summaries.
QString formatCount(double n);
QString formatFlops(double flops);

}  // namespace shardlab::ui::fieldtext
