// The arrays of one selected node as the design check sees them: its inputs, its output with its
// logical axis names, every parameter's shape with its logical names, how each is sharded (a link
// to it in the sharding view), and the node's parameter count and forward FLOPs. The names are
// editable; the section offers edits through signals and the page applies them.
#pragma once

#include <QMap>
#include <QStringList>
#include <QWidget>

class QFormLayout;
class QLabel;

namespace shardlab::ui {

class AxisNamesEditor;
class ProjectDocument;

class ShapesSection : public QWidget {
  Q_OBJECT

 public:
  ShapesSection(ProjectDocument* doc, const QString& path, QWidget* parent = nullptr);

  void setPath(const QString& path) { path_ = path; }
  // Updates in place: rows of parameters that came or went are added or removed, the others keep
  // their editors (and the focus and cursor in them).
  void refresh();

 signals:
  // Empty names: back to the layer's default (a parameter) or to the inferred names (the output).
  void paramAxesEdited(const QString& param, const QStringList& names);
  void outputAxesEdited(const QStringList& names);

 private:
  struct ParamRow {
    QLabel* label = nullptr;
    QWidget* box = nullptr;
    QLabel* shape = nullptr;
    QLabel* sharding = nullptr;
    AxisNamesEditor* axes = nullptr;  // null for a Repeat's stacked parameters (named in its block)
  };
  ParamRow makeParamRow(const QString& name, bool editable);
  void removeParamRow(const QString& name);
  // "<a>P(None, 'model')</a> · (784, 64) per device", or the array's sharding error in red.
  QString shardingText(const std::string& array) const;

  ProjectDocument* doc_;
  QString path_;
  QFormLayout* form_;
  QLabel* inputs_;
  QLabel* output_;
  QLabel* outputSharding_;
  AxisNamesEditor* outputAxes_;
  QLabel* stats_;
  QLabel* note_;
  QMap<QString, ParamRow> params_;
  QStringList order_;  // parameter names in the rows' order
};

}  // namespace shardlab::ui
