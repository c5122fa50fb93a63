// The editor for one field of a layer, built from the catalog's FieldInfo: a line edit for numbers,
// names and lists, a check box for a switch, a menu for an initializer (with a stddev box for
// "normal"). It checks what is typed as it is typed: a bad value turns the editor red with the
// reason under it and is not offered; a good one is offered through valueEdited().
#pragma once

#include <QWidget>

#include "engine/api/engine.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;

namespace shardlab::ui {

class FieldEditor : public QWidget {
  Q_OBJECT

 public:
  FieldEditor(const graph::FieldInfo& info, QWidget* parent = nullptr);

  const graph::FieldInfo& info() const { return info_; }
  // Shows the node's stored value (null: unset, the default shows). Text a person is typing is
  // left alone when it already means that value, and a refused text stays (red) until the stored
  // value changes from elsewhere: updates never take the editor away from someone typing in it.
  void setStored(const graph::Json& stored);
  // Several nodes disagree: blank with "(mixed)", a partly checked box, no menu item.
  void setMixed();
  // The value last offered through valueEdited(): what to store (null: remove the key).
  const graph::Json& value() const { return value_; }
  QString error() const { return error_; }

 signals:
  void valueEdited();
  // Editing finished (Enter, or focus left the field) on a value the field refuses: the reason, for
  // the Log (every refused edit is logged; the field shows it meanwhile).
  void refused(const QString& reason);

 private:
  void build();
  void textEdited(const QString& text);
  void initChosen();
  void stddevEdited(const QString& text);
  void offer(const graph::Json& v);
  void setError(QWidget* editor, const QString& error);
  // The value the editor shows now, if it is a valid one.
  bool shownValue(graph::Json* out) const;
  void display(const graph::Json& stored);

  graph::FieldInfo info_;
  graph::Json value_;
  graph::Json lastStored_;
  bool mixed_ = false;
  QString error_;
  QLineEdit* line_ = nullptr;     // Int, Number, String, IntList, NameList
  QCheckBox* check_ = nullptr;    // Bool
  QComboBox* combo_ = nullptr;    // Init
  QLineEdit* stddev_ = nullptr;   // Init "normal"
  QLabel* errorLabel_ = nullptr;
};

}  // namespace shardlab::ui
