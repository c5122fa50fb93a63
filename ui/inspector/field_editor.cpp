#include "ui/inspector/field_editor.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QVBoxLayout>
#include <cmath>

#include "ui/inspector/error_marks.h"
#include "ui/inspector/field_text.h"

namespace shardlab::ui {

namespace {

using graph::Json;
using Kind = graph::FieldInfo::Kind;

// The name and stddev an initializer value means; false when it is neither form.
bool readInit(const Json& v, QString* name, Json* stddev) {
  *stddev = Json();
  if (v.is_string()) {
    *name = QString::fromStdString(v.get<std::string>());
    return true;
  }
  if (v.is_object() && v.contains("type") && v["type"].is_string()) {
    *name = QString::fromStdString(v["type"].get<std::string>());
    if (v.contains("stddev")) *stddev = v["stddev"];
    return true;
  }
  return false;
}

Json normalInit(double stddev) { return Json{{"type", "normal"}, {"stddev", stddev}}; }

bool parseStddev(const QString& text, double* out) {
  bool ok = false;
  const double v = text.trimmed().toDouble(&ok);
  if (!ok || !(v > 0) || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace

FieldEditor::FieldEditor(const graph::FieldInfo& info, QWidget* parent) : QWidget(parent), info_(info) {
  setObjectName("fieldEditor:" + QString::fromStdString(info.key));
  build();
  display(Json());
}

void FieldEditor::build() {
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  column->setSpacing(2);
  const QString key = QString::fromStdString(info_.key);
  const QString help = QString::fromStdString(info_.help);
  switch (info_.kind) {
    case Kind::Bool:
      check_ = new QCheckBox(help, this);
      check_->setObjectName("field:" + key);
      column->addWidget(check_);
      connect(check_, &QCheckBox::clicked, this, [this] {
        // A click on a partly checked (mixed) box decides it for every node.
        check_->setTristate(false);
        mixed_ = false;
        offer(fieldtext::normalize(info_, Json(check_->isChecked())));
      });
      break;
    case Kind::Init: {
      auto* row = new QHBoxLayout;
      row->setSpacing(6);
      combo_ = new QComboBox(this);
      combo_->setObjectName("field:" + key);
      combo_->addItems(fieldtext::initializerNames());
      combo_->setToolTip(help);
      stddev_ = new QLineEdit(this);
      stddev_->setObjectName("field:" + key + ".stddev");
      stddev_->setPlaceholderText("0.01");
      stddev_->setToolTip(tr("standard deviation of the normal initializer (> 0)"));
      stddev_->setMaximumWidth(90);
      row->addWidget(combo_, 1);
      row->addWidget(stddev_);
      column->addLayout(row);
      connect(combo_, &QComboBox::activated, this, &FieldEditor::initChosen);
      connect(stddev_, &QLineEdit::textEdited, this, &FieldEditor::stddevEdited);
      break;
    }
    default:
      line_ = new QLineEdit(this);
      line_->setObjectName("field:" + key);
      line_->setToolTip(help);
      line_->setClearButtonEnabled(false);
      column->addWidget(line_);
      connect(line_, &QLineEdit::textEdited, this, &FieldEditor::textEdited);
      connect(line_, &QLineEdit::editingFinished, this, [this] {
        if (!error_.isEmpty()) emit refused(error_);
      });
      break;
  }
  errorLabel_ = makeErrorLabel("error:" + key, this);
  column->addWidget(errorLabel_);
}

void FieldEditor::textEdited(const QString& text) {
  const fieldtext::Parsed p = fieldtext::parse(info_, text);
  if (!p.ok()) {
    setError(line_, p.error);
    return;
  }
  setError(line_, {});
  mixed_ = false;
  offer(p.value);
}

void FieldEditor::initChosen() {
  const QString name = combo_->currentText();
  setError(stddev_, {});
  mixed_ = false;
  if (name != "normal") {
    stddev_->hide();
    offer(fieldtext::normalize(info_, Json(name.toStdString())));
    return;
  }
  double s = fieldtext::kDefaultNormalStddev;
  if (!parseStddev(stddev_->text(), &s)) {
    s = fieldtext::kDefaultNormalStddev;
    stddev_->setText(QString::number(s));
  }
  stddev_->show();
  offer(fieldtext::normalize(info_, normalInit(s)));
}

void FieldEditor::stddevEdited(const QString& text) {
  double s = 0;
  if (!parseStddev(text, &s)) {
    setError(stddev_, tr("%1.stddev: '%2' is not a number > 0").arg(QString::fromStdString(info_.key), text.trimmed()));
    return;
  }
  setError(stddev_, {});
  offer(fieldtext::normalize(info_, normalInit(s)));
}

void FieldEditor::offer(const Json& v) {
  value_ = v;
  emit valueEdited();
}

void FieldEditor::setError(QWidget* editor, const QString& error) {
  error_ = error;
  showFieldError(editor, errorLabel_, error);
}

bool FieldEditor::shownValue(Json* out) const {
  if (line_) {
    const fieldtext::Parsed p = fieldtext::parse(info_, line_->text());
    if (!p.ok()) return false;
    *out = p.value;
    return true;
  }
  if (check_) {
    if (check_->checkState() == Qt::PartiallyChecked) return false;
    *out = fieldtext::normalize(info_, Json(check_->isChecked()));
    return true;
  }
  if (combo_->currentIndex() < 0) return false;
  if (combo_->currentText() != "normal") {
    *out = fieldtext::normalize(info_, Json(combo_->currentText().toStdString()));
    return true;
  }
  double s = 0;
  if (!parseStddev(stddev_->text(), &s)) return false;
  *out = fieldtext::normalize(info_, normalInit(s));
  return true;
}

void FieldEditor::setStored(const Json& stored) {
  Json shown;
  if (!mixed_ && error_.isEmpty() && shownValue(&shown) && shown == stored) {
    lastStored_ = stored;
    return;  // the editor already says this; leave the cursor where it is
  }
  // A refused text stays in front of the person who typed it until the value changes elsewhere.
  if (!mixed_ && !error_.isEmpty() && stored == lastStored_) return;
  display(stored);
}

void FieldEditor::display(const Json& stored) {
  mixed_ = false;
  lastStored_ = stored;
  const Json effective = stored.is_null() ? info_.value : stored;
  if (line_) {
    setError(line_, {});
    line_->setPlaceholderText(info_.required ? QString() : fieldtext::format(info_, info_.value));
    line_->setText(fieldtext::format(info_, stored));
  } else if (check_) {
    setError(check_, {});
    check_->setTristate(false);
    check_->setChecked(effective.is_boolean() && effective.get<bool>());
  } else {
    setError(stddev_, {});
    QString name;
    Json stddev;
    if (!readInit(effective, &name, &stddev)) name.clear();
    combo_->setCurrentIndex(combo_->findText(name));
    stddev_->setVisible(name == "normal");
    stddev_->setText(stddev.is_number() ? QString::number(stddev.get<double>(), 'g', 12) : QString());
  }
}

void FieldEditor::setMixed() {
  if (mixed_) return;  // already blank, or holding a refused text someone typed over the mix
  mixed_ = true;
  if (line_) {
    setError(line_, {});
    line_->clear();
    line_->setPlaceholderText(tr("(mixed)"));
  } else if (check_) {
    setError(check_, {});
    check_->setTristate(true);
    check_->setCheckState(Qt::PartiallyChecked);
  } else {
    setError(stddev_, {});
    combo_->setCurrentIndex(-1);
    combo_->setPlaceholderText(tr("(mixed)"));
    stddev_->hide();
  }
}

}  // namespace shardlab::ui
