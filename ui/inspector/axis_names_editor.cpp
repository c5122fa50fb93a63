#include "ui/inspector/axis_names_editor.h"

#include <QLabel>
#include <QLineEdit>
#include <QVBoxLayout>

#include "ui/inspector/error_marks.h"
#include "ui/inspector/field_text.h"

namespace shardlab::ui {

AxisNamesEditor::AxisNamesEditor(const QString& what, QWidget* parent) : QWidget(parent), what_(what) {
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  column->setSpacing(2);
  line_ = new QLineEdit(this);
  line_->setObjectName("axes:" + what);
  line_->setToolTip(tr("Logical axis names of %1, one per dimension, separated by commas; the rules map them to mesh "
                       "axes. Empty: the default shown in grey.")
                        .arg(what));
  errorLabel_ = makeErrorLabel("error:axes:" + what, this);
  column->addWidget(line_);
  column->addWidget(errorLabel_);
  connect(line_, &QLineEdit::textEdited, this, [this](const QString& text) {
    std::vector<std::string> names;
    QString error;
    if (!validate(text, &names, &error)) {
      setError(error);
      return;
    }
    setError({});
    value_ = names;
    emit valueEdited();
  });
}

bool AxisNamesEditor::validate(const QString& text, std::vector<std::string>* names, QString* error) const {
  const QString what = what_ + " axes";
  if (!fieldtext::parseNames(text, what, names, error)) return false;
  if (!names->empty() && rank_ >= 0 && int(names->size()) != rank_) {
    *error = tr("%1: %2 for %3 dimensions (give one name per dimension, e.g. %4; empty for the default)")
                 .arg(what)
                 .arg(names->size() == 1 ? tr("1 name") : tr("%1 names").arg(names->size()))
                 .arg(rank_)
                 .arg(defaults_.empty() ? QString("…") : fieldtext::joinNames(defaults_));
    return false;
  }
  // Naming exactly the default stores nothing, so files keep only real overrides.
  if (*names == defaults_) names->clear();
  return true;
}

void AxisNamesEditor::setState(int rank, const std::vector<std::string>& defaults, const std::vector<std::string>& current) {
  rank_ = rank;
  defaults_ = defaults;
  line_->setPlaceholderText(fieldtext::joinNames(defaults));
  std::vector<std::string> names;
  QString error;
  if (initialized_) {
    // An override that spells out the default means the same as none.
    const std::vector<std::string> meant = current == defaults ? std::vector<std::string>{} : current;
    const bool valid = validate(line_->text(), &names, &error);
    if (valid && names == meant) {
      lastCurrent_ = current;
      setError({});
      return;
    }
    if (!error_.isEmpty() && current == lastCurrent_) return;  // keep the refused text in front of its typist
  }
  initialized_ = true;
  lastCurrent_ = current;
  line_->setText(fieldtext::joinNames(current));
  // A stored override can stop fitting when the array's rank changes; say so where it is.
  error.clear();
  validate(line_->text(), &names, &error);
  setError(error);
}

void AxisNamesEditor::setError(const QString& error) {
  error_ = error;
  showFieldError(line_, errorLabel_, error);
}

}  // namespace shardlab::ui
