// The editor of an array's logical axis names ("embed, mlp"): one name per dimension, so the count
// must match the array's rank. Empty means the default (the layer's names for a parameter, the
// inferred ones for an output), shown as the placeholder. A wrong count or an empty name turns it
// red with the reason and is not offered.
#pragma once

#include <QWidget>
#include <string>
#include <vector>

class QLabel;
class QLineEdit;

namespace shardlab::ui {

class AxisNamesEditor : public QWidget {
  Q_OBJECT

 public:
  // `what` names the array in messages and object names: "kernel" -> "axes:kernel".
  AxisNamesEditor(const QString& what, QWidget* parent = nullptr);

  // `rank`: the names needed (< 0: unknown, the count is not checked); `defaults`: what an empty
  // editor means; `current`: the stored override (empty: none). Text being typed that already
  // means `current` is left alone, as is a refused text while `current` does not change.
  void setState(int rank, const std::vector<std::string>& defaults, const std::vector<std::string>& current);
  // The names last offered through valueEdited(); empty: back to the default.
  const std::vector<std::string>& value() const { return value_; }
  QString error() const { return error_; }
  QLineEdit* lineEdit() const { return line_; }

 signals:
  void valueEdited();

 private:
  // Reads `text` under the current rank; empty `names` with no error is the default.
  bool validate(const QString& text, std::vector<std::string>* names, QString* error) const;
  void setError(const QString& error);

  QString what_;
  int rank_ = -1;
  std::vector<std::string> defaults_, lastCurrent_, value_;
  bool initialized_ = false;
  QString error_;
  QLineEdit* line_;
  QLabel* errorLabel_;
};

}  // namespace shardlab::ui
