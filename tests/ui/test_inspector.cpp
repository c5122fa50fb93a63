// The Inspector as a person uses it: select nodes, type into field and axis editors, click check
// boxes, pick from menus, rename, and edit the project's settings with nothing selected; checked
// against the project, the design check and the undo stack.
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QGuiApplication>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPointer>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/engine/test_support.h"
#include "tests/engine/zip_writer.h"
#include "tests/ui/window_menus.h"
#include "ui/document/graph_edits.h"
#include "ui/document/project_document.h"
#include "ui/inspector/inspector.h"
#include "ui/inspector/inspector_page.h"
#include "ui/main_window.h"

using namespace shardlab;
using namespace shardlab::ui;
using graph::Json;

class TestInspector : public QObject {
  Q_OBJECT

 private:
  ProjectDocument* doc_ = nullptr;
  Inspector* inspector_ = nullptr;

  void open(const QString& name) {
    doc_->open(QStringLiteral(SHARDLAB_SOURCE_DIR "/projects/") + name);
  }
  // Removed rows and replaced pages go with deleteLater(); let them go before looking things up.
  void settle() { QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete); }
  template <class T>
  T* find(const QString& name) {
    settle();
    return inspector_->findChild<T*>(name);
  }
  QLabel* label(const QString& name) { return find<QLabel>(name); }
  // Click into the editor, select everything in it and type, as a person replacing a value.
  void typeInto(QLineEdit* e, const QString& text) {
    QVERIFY(e);
    QTest::mouseClick(e, Qt::LeftButton);
    QTest::keyClick(e, Qt::Key_A, Qt::ControlModifier);
    if (text.isEmpty()) QTest::keyClick(e, Qt::Key_Backspace);
    else QTest::keyClicks(e, text);
  }
  const graph::Node& node(const std::string& path) {
    const graph::Node* n = edits::find_node(doc_->project(), path);
    if (!n) qFatal("no node %s", path.c_str());
    return *n;
  }
  const graph::NodeReport* report(const std::string& path) { return doc_->design().graph.find(path); }
  static bool shown(QWidget* w) { return w && !w->isHidden(); }
  // A version 1.0 .npy file of little-endian values (numpy's format, written by hand so the test
  // needs nothing but the file).
  template <class T>
  static QByteArray npyBytes(const char* descr, const QString& shape, const std::vector<T>& values) {
    QByteArray header = QString("{'descr': '%1', 'fortran_order': False, 'shape': %2, }").arg(descr, shape).toLatin1();
    while ((10 + header.size() + 1) % 64) header += ' ';
    header += '\n';
    QByteArray bytes("\x93NUMPY\x01\x00", 8);
    bytes += char(header.size() & 0xff);
    bytes += char(header.size() >> 8);
    bytes += header;
    bytes += QByteArray(reinterpret_cast<const char*>(values.data()), qsizetype(values.size() * sizeof(T)));
    return bytes;
  }
  static void writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QCOMPARE(f.write(bytes), bytes.size());
  }
  template <class T>
  static void writeNpy(const QString& path, const char* descr, const QString& shape, const std::vector<T>& values) {
    writeFile(path, npyBytes(descr, shape, values));
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QDir().mkpath(SHARDLAB_BINARY_DIR "/ui-screenshots");
  }

  void init() {
    doc_ = new ProjectDocument;
    open("fashion-mlp.shardlab.json");
    inspector_ = new Inspector(doc_);
    inspector_->resize(380, 900);
    inspector_->show();
    inspector_->activateWindow();
    QVERIFY(QTest::qWaitForWindowExposed(inspector_));
  }

  void cleanup() {
    delete inspector_;
    delete doc_;
    inspector_ = nullptr;
    doc_ = nullptr;
  }

  void nothingSelectedShowsTheProject() {
    QVERIFY(find<QWidget>("projectPage"));
    QCOMPARE(find<QLineEdit>("projectName")->text(), QString("fashion-mlp"));
    VERIFY_CONTAINS(find<QPlainTextEdit>("projectDescription")->toPlainText(), "Fashion-MNIST");
    QCOMPARE(find<QComboBox>("lossType")->currentText(), QString("softmax_cross_entropy"));
    QCOMPARE(find<QComboBox>("lossOutput")->currentText(), QString("dense2"));
    // 784*256 + 256 + 256*10 + 10 parameters.
    VERIFY_CONTAINS(label("projectSummary")->text(), "203,530 parameters");
    VERIFY_CONTAINS(label("projectSummary")->text(), "0 error(s)");
  }

  void typingAFieldAppliesAsOneUndoStep() {
    doc_->setSelection({"dense1"});
    QVERIFY(find<QWidget>("nodePage"));
    QCOMPARE(label("nodeTitle")->text(), QString("Dense"));
    QPointer<QLineEdit> features = find<QLineEdit>("field:features");
    QCOMPARE(features->text(), QString("256"));
    VERIFY_CONTAINS(label("shape:output")->text(), "256");
    const int before = doc_->undoStack()->count();

    typeInto(features, "512");
    QCOMPARE(node("dense1").params["features"], Json(512));
    QCOMPARE(report("dense1")->output.shape, (Shape{128, 512}));
    VERIFY_CONTAINS(label("shape:output")->text(), "512");
    VERIFY_CONTAINS(label("shape:kernel")->text(), "784, mlp 512");
    // The editor was updated in place, not rebuilt: same widget, focus and text kept.
    QVERIFY(features);
    QCOMPARE(find<QLineEdit>("field:features"), features.data());
    QVERIFY(features->hasFocus());
    QCOMPARE(features->text(), QString("512"));
    QCOMPARE(doc_->undoStack()->count(), before + 1);

    doc_->undoStack()->undo();
    QCOMPARE(node("dense1").params["features"], Json(256));
    QCOMPARE(report("dense1")->output.shape, (Shape{128, 256}));
    QCOMPARE(features->text(), QString("256"));
    VERIFY_CONTAINS(label("shape:output")->text(), "256");
  }

  void badValuesAreRedAndNotApplied() {
    doc_->setSelection({"dense1"});
    QLineEdit* features = find<QLineEdit>("field:features");
    QLabel* error = label("error:features");
    const int before = doc_->undoStack()->count();
    typeInto(features, "abc");
    QVERIFY(shown(error));
    VERIFY_CONTAINS(error->text(), "features: 'abc' is not a whole number");
    QVERIFY(features->property("invalid").toBool());
    QCOMPARE(node("dense1").params["features"], Json(256));

    typeInto(features, "0");
    VERIFY_CONTAINS(error->text(), "positive integer");
    // Confirmed with Enter, the refused value goes to the Log too.
    QSignalSpy logged(doc_, &ProjectDocument::message);
    QTest::keyClick(features, Qt::Key_Return);
    QVERIFY(!logged.isEmpty());
    QCOMPARE(logged.last().at(0).toString(), QString("warning"));
    VERIFY_CONTAINS(logged.last().at(1).toString(), "Edit of features refused");
    VERIFY_CONTAINS(logged.last().at(1).toString(), "positive integer");
    typeInto(features, "");
    VERIFY_CONTAINS(error->text(), "required");
    QCOMPARE(node("dense1").params["features"], Json(256));
    QCOMPARE(doc_->undoStack()->count(), before);

    typeInto(features, "64");
    QVERIFY(!shown(error));
    QVERIFY(!features->property("invalid").toBool());
    QCOMPARE(node("dense1").params["features"], Json(64));
  }

  void numberFieldChecksItsRange() {
    std::string path;
    QVERIFY(doc_->edit("add", [&](project::Project& p) { path = edits::add_node(p, "Dropout", "", 0, 0); }));
    doc_->setSelection({QString::fromStdString(path)});
    QLineEdit* rate = find<QLineEdit>("field:rate");
    QVERIFY(rate);
    QCOMPARE(rate->text(), QString());  // unset: the default shows as the placeholder
    QCOMPARE(rate->placeholderText(), QString("0.5"));
    typeInto(rate, "2");
    VERIFY_CONTAINS(label("error:rate")->text(), "out of range");
    QVERIFY(!node(path).params.contains("rate"));
    typeInto(rate, "0.25");
    QVERIFY(!shown(label("error:rate")));
    QCOMPARE(node(path).params["rate"], Json(0.25));
    // Typing the default back removes the key: files keep only what differs.
    typeInto(rate, "0.5");
    QVERIFY(!node(path).params.contains("rate"));
  }

  void appliedValueTheDesignRejectsShowsItsError() {
    doc_->setSelection({"image"});
    QVERIFY(!shown(label("nodeError")));
    typeInto(find<QLineEdit>("field:axes"), "a, b, c");
    // A well-formed list is applied; the check then says why the node is wrong, and the edit stays.
    QCOMPARE(node("image").params["axes"], Json::array({"a", "b", "c"}));
    QVERIFY(shown(label("nodeError")));
    VERIFY_CONTAINS(label("nodeError")->text(), "axes: 3 names for a shape of rank 2");
    typeInto(find<QLineEdit>("field:axes"), "h, w");
    QVERIFY(!shown(label("nodeError")));
    VERIFY_CONTAINS(label("shape:output")->text(), "h 28, w 28");
  }

  // A convolution's window fields as a person edits them: strides halve the image and everything
  // after it follows, VALID drops the padding, and a window the image cannot hold is refused on
  // the node, naming the field; a pool's window likewise.
  void convolutionWindowFieldsReshapeTheImage() {
    open("cnn-fashion.shardlab.json");
    doc_->setSelection({"conv1"});
    QCOMPARE(label("nodeTitle")->text(), QString("Conv2D"));
    QCOMPARE(find<QLineEdit>("field:kernel_size")->text(), QString("3, 3"));
    VERIFY_CONTAINS(label("shape:output")->text(), "height 28, width 28, channels 32");
    VERIFY_CONTAINS(label("shape:kernel")->text(), "window_height 3, window_width 3, in_channels 1, channels 32");

    typeInto(find<QLineEdit>("field:strides"), "2, 2");
    QCOMPARE(node("conv1").params["strides"], Json::array({2, 2}));
    QCOMPARE(report("conv1")->output.shape, (Shape{128, 14, 14, 32}));
    VERIFY_CONTAINS(label("shape:output")->text(), "height 14, width 14");
    QCOMPARE(report("dense1")->params[0].shape, (Shape{3 * 3 * 64, 256}));  // 14 -> 7 -> 3 after the pools

    typeInto(find<QLineEdit>("field:padding"), "VALID");
    QCOMPARE(report("conv1")->output.shape, (Shape{128, 13, 13, 32}));
    typeInto(find<QLineEdit>("field:kernel_size"), "30, 3");
    QVERIFY(shown(label("nodeError")));
    VERIFY_CONTAINS(label("nodeError")->text(), "kernel_size: a window 30 high (with its dilation) does not fit the height 28");
    typeInto(find<QLineEdit>("field:padding"), "SAME");
    QVERIFY(!shown(label("nodeError")));

    doc_->setSelection({"pool1"});
    QCOMPARE(label("nodeTitle")->text(), QString("AvgPool2D"));
    typeInto(find<QLineEdit>("field:window"), "3");
    QCOMPARE(node("pool1").params["window"], Json::array({3}));
    QCOMPARE(report("pool1")->output.shape, (Shape{128, 4, 4, 32}));  // 14 by windows of 3, 3 apart
  }

  void useBiasRemovesTheBiasParameter() {
    doc_->setSelection({"dense1"});
    QCheckBox* bias = find<QCheckBox>("field:use_bias");
    QVERIFY(bias->isChecked());
    QVERIFY(find<QLineEdit>("axes:bias"));
    QTest::mouseClick(bias, Qt::LeftButton, {}, QPoint(6, bias->height() / 2));
    QCOMPARE(node("dense1").params["use_bias"], Json(false));
    QCOMPARE(report("dense1")->params.size(), size_t(1));
    QCOMPARE(report("dense1")->params[0].name, std::string("kernel"));
    QVERIFY(!find<QLineEdit>("axes:bias"));
    QTest::mouseClick(bias, Qt::LeftButton, {}, QPoint(6, bias->height() / 2));
    QVERIFY(!node("dense1").params.contains("use_bias"));  // the default again: the key goes
    QCOMPARE(report("dense1")->params.size(), size_t(2));
    QVERIFY(find<QLineEdit>("axes:bias"));
  }

  void initializerMenuAndStddev() {
    doc_->setSelection({"dense1"});
    QComboBox* init = find<QComboBox>("field:kernel_init");
    QLineEdit* stddev = find<QLineEdit>("field:kernel_init.stddev");
    QCOMPARE(init->currentText(), QString("lecun_normal"));
    QVERIFY(stddev->isHidden());
    init->setFocus();
    QTest::keyClick(init, Qt::Key_Down);
    QTest::keyClick(init, Qt::Key_Down);
    QCOMPARE(init->currentText(), QString("xavier_uniform"));
    QCOMPARE(node("dense1").params["kernel_init"], Json("xavier_uniform"));
    QCOMPARE(report("dense1")->params[0].init.type, std::string("xavier_uniform"));

    QTest::keyClick(init, Qt::Key_Down);
    QCOMPARE(node("dense1").params["kernel_init"], (Json{{"type", "normal"}, {"stddev", 0.02}}));
    QVERIFY(!stddev->isHidden());
    typeInto(stddev, "-1");
    VERIFY_CONTAINS(label("error:kernel_init")->text(), "kernel_init.stddev");
    QCOMPARE(node("dense1").params["kernel_init"]["stddev"], Json(0.02));
    typeInto(stddev, "0.05");
    QCOMPARE(node("dense1").params["kernel_init"], (Json{{"type", "normal"}, {"stddev", 0.05}}));
    QCOMPARE(report("dense1")->params[0].init.stddev, 0.05);

    for (int i = 0; i < 3; ++i) QTest::keyClick(init, Qt::Key_Up);
    QCOMPARE(init->currentText(), QString("lecun_normal"));
    QVERIFY(!node("dense1").params.contains("kernel_init"));
  }

  void kernelAxes() {
    doc_->setSelection({"dense1"});
    QPointer<QLineEdit> kernel = find<QLineEdit>("axes:kernel");
    QCOMPARE(kernel->text(), QString());
    QCOMPARE(kernel->placeholderText(), QString("embed, mlp"));
    const int before = doc_->undoStack()->count();
    typeInto(kernel, "embed, hidden");
    QCOMPARE(node("dense1").param_axes["kernel"], Json::array({"embed", "hidden"}));
    QCOMPARE(report("dense1")->params[0].axes, (std::vector<std::string>{"embed", "hidden"}));
    VERIFY_CONTAINS(label("shape:kernel")->text(), "(embed 784, hidden 256)");
    QCOMPARE(find<QLineEdit>("axes:kernel"), kernel.data());  // updated in place while typing
    QVERIFY(kernel->hasFocus());
    // The bias follows the kernel's output name by default, and the output is named after it.
    QCOMPARE(find<QLineEdit>("axes:bias")->placeholderText(), QString("hidden"));
    VERIFY_CONTAINS(label("shape:output")->text(), "hidden 256");
    QCOMPARE(doc_->undoStack()->count(), before + 1);

    // One name for a rank-2 kernel: refused at every key, so nothing of it is applied.
    typeInto(kernel, "hidden");
    QVERIFY(kernel->property("invalid").toBool());
    VERIFY_CONTAINS(label("error:axes:kernel")->text(), "kernel axes: 1 name for 2 dimensions");
    QCOMPARE(node("dense1").param_axes["kernel"], Json::array({"embed", "hidden"}));
    // Three: the two-name prefix typed on the way was a valid edit, the third name is refused.
    typeInto(kernel, "x, y, z");
    VERIFY_CONTAINS(label("error:axes:kernel")->text(), "kernel axes: 3 names for 2 dimensions");
    QCOMPARE(node("dense1").param_axes["kernel"], Json::array({"x", "y"}));
    typeInto(kernel, "embed, hidden");
    QCOMPARE(node("dense1").param_axes["kernel"], Json::array({"embed", "hidden"}));

    typeInto(kernel, "");  // empty: back to the layer's default
    QVERIFY(!kernel->property("invalid").toBool());
    QVERIFY(!node("dense1").param_axes.contains("kernel"));
    QCOMPARE(report("dense1")->params[0].axes, (std::vector<std::string>{"embed", "mlp"}));
  }

  void outputAxes() {
    doc_->setSelection({"dense1"});
    QLineEdit* out = find<QLineEdit>("axes:output");
    QCOMPARE(out->placeholderText(), QString("batch, mlp"));
    typeInto(out, "batch");
    VERIFY_CONTAINS(label("error:axes:output")->text(), "1 name for 2 dimensions");
    QVERIFY(node("dense1").output_axes.is_null());
    typeInto(out, "batch, act");
    QCOMPARE(node("dense1").output_axes, Json::array({"batch", "act"}));
    QCOMPARE(report("dense1")->output.axes, (std::vector<std::string>{"batch", "act"}));
    QCOMPARE(report("relu")->output.axes, (std::vector<std::string>{"batch", "act"}));
  }

  void renameNode() {
    doc_->setSelection({"dense1"});
    QPointer<QWidget> page = find<QWidget>("nodePage");
    QLineEdit* name = find<QLineEdit>("nodeName");
    QCOMPARE(name->text(), QString("dense1"));
    typeInto(name, "hidden");
    QVERIFY(edits::find_node(doc_->project(), "dense1"));  // applied on Enter, not per key
    QTest::keyClick(name, Qt::Key_Return);
    QVERIFY(!edits::find_node(doc_->project(), "dense1"));
    QCOMPARE(node("hidden").params["features"], Json(256));
    QCOMPARE(doc_->selection(), QStringList{"hidden"});
    QVERIFY(page);  // the same page follows the node under its new name
    QCOMPARE(find<QWidget>("nodePage"), page.data());
    QCOMPARE(name->text(), QString("hidden"));

    const int before = doc_->undoStack()->count();
    typeInto(name, "dense2");
    VERIFY_CONTAINS(label("error:nodeName")->text(), "a node named 'dense2' already exists");
    QTest::keyClick(name, Qt::Key_Return);
    QVERIFY(edits::find_node(doc_->project(), "hidden"));
    QVERIFY(shown(label("error:nodeName")));
    typeInto(name, "a b");
    VERIFY_CONTAINS(label("error:nodeName")->text(), "'a b' is not a valid name");
    QTest::keyClick(name, Qt::Key_Return);
    QCOMPARE(doc_->undoStack()->count(), before);
    QVERIFY(edits::find_node(doc_->project(), "hidden"));
  }

  void multipleNodesShareFieldsAndEditInOneStep() {
    doc_->setSelection({"dense1", "dense2"});
    VERIFY_CONTAINS(label("nodeTitle")->text(), "2 Dense nodes");
    QVERIFY(!find<QLineEdit>("nodeName"));
    QLineEdit* features = find<QLineEdit>("field:features");
    QCOMPARE(features->text(), QString());
    QCOMPARE(features->placeholderText(), QString("(mixed)"));
    QVERIFY(find<QCheckBox>("field:use_bias")->isChecked());  // both at the default

    const int before = doc_->undoStack()->count();
    typeInto(features, "64");
    QCOMPARE(node("dense1").params["features"], Json(64));
    QCOMPARE(node("dense2").params["features"], Json(64));
    QCOMPARE(doc_->undoStack()->count(), before + 1);
    QCOMPARE(features->text(), QString("64"));
    doc_->undoStack()->undo();
    QCOMPARE(node("dense1").params["features"], Json(256));
    QCOMPARE(node("dense2").params["features"], Json(10));
    QCOMPARE(features->text(), QString());
    QCOMPARE(features->placeholderText(), QString("(mixed)"));

    QCheckBox* bias = find<QCheckBox>("field:use_bias");
    QTest::mouseClick(bias, Qt::LeftButton, {}, QPoint(6, bias->height() / 2));
    QCOMPARE(node("dense1").params["use_bias"], Json(false));
    QCOMPARE(node("dense2").params["use_bias"], Json(false));
    QCOMPARE(doc_->undoStack()->count(), before + 1);
  }

  void differentTypesShowOnlyTheSelection() {
    doc_->setSelection({"dense1", "relu"});
    QVERIFY(find<QWidget>("mixedPage"));
    QVERIFY(!find<QLineEdit>("field:features"));
    VERIFY_CONTAINS(label("nodeMembers")->text(), "dense1  (Dense)");
    VERIFY_CONTAINS(label("nodeMembers")->text(), "relu  (ReLU)");
  }

  void projectSettings() {
    QLineEdit* name = find<QLineEdit>("projectName");
    typeInto(name, "my-net");
    QCOMPARE(doc_->project().name, std::string("my-net"));
    typeInto(name, "");
    VERIFY_CONTAINS(label("error:projectName")->text(), "name: required");
    QCOMPARE(doc_->project().name, std::string("my-net"));

    QPlainTextEdit* description = find<QPlainTextEdit>("projectDescription");
    description->setFocus();
    description->selectAll();
    QTest::keyClicks(description, "A small MLP");
    QCOMPARE(doc_->project().description, std::string("A small MLP"));

    QComboBox* output = find<QComboBox>("lossOutput");
    QCOMPARE(output->count(), 5);  // image, flatten, dense1, relu, dense2
    output->setFocus();
    QTest::keyClick(output, Qt::Key_Up);
    QCOMPARE(doc_->project().loss.output, std::string("relu"));
    QCOMPARE(doc_->project().loss_json["output"], Json("relu"));
    QComboBox* type = find<QComboBox>("lossType");
    type->setFocus();
    QTest::keyClick(type, Qt::Key_Down);
    QCOMPARE(doc_->project().loss.type, std::string("mean_squared_error"));
    QCOMPARE(doc_->project().loss_json["type"], Json("mean_squared_error"));
    // The file written back holds what was set.
    const Json saved = Json::parse(project::to_json_string(doc_->project()));
    QCOMPARE(saved["loss"], (Json{{"type", "mean_squared_error"}, {"output", "relu"}}));
    QCOMPARE(saved["name"], Json("my-net"));

    doc_->undoStack()->undo();
    QCOMPARE(type->currentText(), QString("softmax_cross_entropy"));
  }

  // Pasting into the description: a megabyte (over a project's 64 KiB limit for a text) is refused
  // at once, saying why, with the description as it was; the largest allowed paste, one unbroken
  // 60 KiB run (a hash, a blob), is taken and laid out within the 2 s a user waits for an answer.
  void aPasteIsBoundedAndAnswersAtOnce() {
    QPlainTextEdit* description = find<QPlainTextEdit>("projectDescription");
    description->setFocus();
    description->selectAll();
    QTest::keyClicks(description, "before");
    QCOMPARE(doc_->project().description, std::string("before"));
    QClipboard* clipboard = QGuiApplication::clipboard();
    clipboard->setText(QString(1 << 20, QChar('x')));
    QSignalSpy logged(doc_, &ProjectDocument::message);
    QElapsedTimer t;
    t.start();
    QTest::keyClick(description, Qt::Key_V, Qt::ControlModifier);
    QApplication::processEvents();
    QVERIFY2(t.elapsed() < 2000, qPrintable(QString("a refused paste took %1 ms").arg(t.elapsed())));
    QCOMPARE(description->toPlainText(), QString("before"));
    QCOMPARE(doc_->project().description, std::string("before"));
    VERIFY_CONTAINS(label("error:projectDescription")->text(), "description: the paste was refused");
    QCOMPARE(logged.count(), 1);  // in the Log too
    QCOMPARE(logged.last().at(1).toString(), label("error:projectDescription")->text());
    VERIFY_CONTAINS(label("error:projectDescription")->text(), "65,536");

    clipboard->setText(QString(60 * 1024, QChar('y')));
    description->selectAll();
    t.restart();
    QTest::keyClick(description, Qt::Key_V, Qt::ControlModifier);
    description->repaint();  // laid out and drawn, as a person would see it
    QVERIFY2(t.elapsed() < 2000, qPrintable(QString("a 60 KiB paste took %1 ms").arg(t.elapsed())));
    QCOMPARE(doc_->project().description.size(), size_t(60 * 1024));
    QVERIFY(label("error:projectDescription")->isHidden());
  }

  // The precision policy is a project setting: each field one undoable edit of the file's
  // precision section; float16 turns loss scaling on unless the box says otherwise.
  void precisionSettings() {
    open("fashion-mlp.shardlab.json");
    QComboBox* dtype = find<QComboBox>("computeDtype");
    QCheckBox* scaling = find<QCheckBox>("lossScaling");
    QCOMPARE(dtype->currentText(), QString("float32"));
    QVERIFY(!scaling->isChecked());
    const int before = doc_->undoStack()->count();
    dtype->setFocus();
    QTest::keyClick(dtype, Qt::Key_Down);  // bfloat16
    QCOMPARE(doc_->project().precision.dtype, DType::BF16);
    QCOMPARE(doc_->project().precision_json["dtype"], Json("bfloat16"));
    QTest::keyClick(dtype, Qt::Key_Down);  // float16
    QCOMPARE(doc_->project().precision.dtype, DType::F16);
    QVERIFY(doc_->project().precision.loss_scale);
    QVERIFY(scaling->isChecked());
    QTest::mouseClick(scaling, Qt::LeftButton, {}, QPoint(6, scaling->height() / 2));
    QVERIFY(!doc_->project().precision.loss_scale);
    QCOMPARE(doc_->project().precision_json["loss_scale"], Json(false));
    QComboBox* params = find<QComboBox>("paramDtype");
    params->setFocus();
    QTest::keyClick(params, Qt::Key_Down);
    QCOMPARE(doc_->project().precision.param_dtype, DType::BF16);
    QComboBox* matmul = find<QComboBox>("matmulPrecision");
    matmul->setFocus();
    QTest::keyClick(matmul, Qt::Key_Down);
    QCOMPARE(doc_->project().precision.matmul_precision, MatmulPrecision::Tf32);
    QCOMPARE(doc_->undoStack()->count(), before + 5);
    // The design check follows: bfloat16 parameters take half the bytes.
    const Json saved = Json::parse(project::to_json_string(doc_->project()));
    QCOMPARE(saved["precision"]["param_dtype"], Json("bfloat16"));
    for (int i = 0; i < 5; ++i) doc_->undoStack()->undo();
    QCOMPARE(dtype->currentText(), QString("float32"));
    QVERIFY(doc_->project().precision_json.is_null());
    QVERIFY(!scaling->isChecked());
  }

  // The Data section sets where the examples come from, each change one undo step, with what the
  // files hold shown and the design check following; a source whose files are not chosen yet is
  // held in the section, not written.
  void dataSectionChoosesTheSource() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    std::vector<float> features(40 * 6);
    for (size_t i = 0; i < features.size(); ++i) features[i] = float(i % 7);
    std::vector<int32_t> labels(40);
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = int32_t(i % 3);
    writeNpy(tmp.filePath("features.npy"), "<f4", "(40, 6)", features);
    writeNpy(tmp.filePath("labels.npy"), "<i4", "(40,)", labels);

    // Rows of other sources are hidden with their rows, not on their own.
    auto visible = [](QWidget* w) { return w && w->isVisible(); };
    QComboBox* type = find<QComboBox>("dataType");
    QVERIFY(shown(type));
    QCOMPARE(type->currentText(), QString("Fashion-MNIST folder"));
    QVERIFY(visible(find<QLineEdit>("dataDir")));
    QVERIFY(!visible(find<QLineEdit>("dataFeatures")));
    VERIFY_CONTAINS(label("dataFound")->text(), "60,000 training examples of (28, 28) with class labels 0-9; 10,000 test examples");
    const int before = doc_->undoStack()->index();

    // A folder with no dataset: written (it is a well-formed source), and the error names it.
    typeInto(find<QLineEdit>("dataDir"), tmp.filePath("nowhere"));
    QTest::keyClick(find<QLineEdit>("dataDir"), Qt::Key_Return);
    QCOMPARE(doc_->project().data.dir, tmp.filePath("nowhere").toStdString());
    QCOMPARE(doc_->undoStack()->index(), before + 1);
    QVERIFY(shown(label("error:data")));
    VERIFY_CONTAINS(label("error:data")->text(), "nowhere");
    QVERIFY(!doc_->design().ok());
    doc_->undoStack()->undo();
    QVERIFY(doc_->design().ok());
    QVERIFY(!shown(label("error:data")));
    QCOMPARE(find<QLineEdit>("dataDir")->text(), QString());

    // NumPy files: nothing changes until both files are chosen.
    type->setFocus();
    QTest::keyClick(type, Qt::Key_Down);  // IDX
    QTest::keyClick(type, Qt::Key_Down);  // NumPy
    QCOMPARE(type->currentText(), QString("NumPy .npy files"));
    QVERIFY(visible(find<QLineEdit>("dataFeatures")));
    QVERIFY(!visible(find<QLineEdit>("dataDir")));
    QVERIFY(shown(label("dataPending")));
    VERIFY_CONTAINS(label("dataPending")->text(), "features and targets");
    QCOMPARE(doc_->project().data.type, std::string("fashion_mnist"));
    QCOMPARE(doc_->undoStack()->index(), before);
    typeInto(find<QLineEdit>("dataFeatures"), tmp.filePath("features.npy"));
    QTest::keyClick(find<QLineEdit>("dataFeatures"), Qt::Key_Return);
    QCOMPARE(doc_->project().data.type, std::string("fashion_mnist"));
    VERIFY_CONTAINS(label("dataPending")->text(), "targets");
    typeInto(find<QLineEdit>("dataTargets"), tmp.filePath("labels.npy"));
    QTest::keyClick(find<QLineEdit>("dataTargets"), Qt::Key_Return);
    QCOMPARE(doc_->project().data.type, std::string("npy"));
    QCOMPARE(doc_->project().data_json["targets"], Json(tmp.filePath("labels.npy").toStdString()));
    QCOMPARE(doc_->undoStack()->index(), before + 1);
    QVERIFY(!shown(label("dataPending")));
    VERIFY_CONTAINS(label("dataFound")->text(), "40 training examples of (6,) with class labels 0-2; no test split");
    // The design check compares them with the model at once: the Input takes (28, 28).
    VERIFY_CONTAINS(label("error:data")->text(), "examples have shape (6,) but the Input node takes (28, 28)");
    find<QWidget>("dataSection")->ensurePolished();
    QVERIFY(find<QWidget>("dataSection")->grab().save(SHARDLAB_BINARY_DIR "/ui-screenshots/inspector-data.png"));

    // A test split and a normalisation written as a fraction.
    typeInto(find<QLineEdit>("dataTestFraction"), "0.25");
    QTest::keyClick(find<QLineEdit>("dataTestFraction"), Qt::Key_Return);
    QCOMPARE(doc_->project().data.test_fraction, 0.25);
    VERIFY_CONTAINS(label("dataFound")->text(), "30 training examples of (6,) with class labels 0-2; 10 test examples");
    typeInto(find<QLineEdit>("dataScale"), "1/255");
    QTest::keyClick(find<QLineEdit>("dataScale"), Qt::Key_Return);
    QCOMPARE(doc_->project().data.scale, 1.0 / 255.0);
    QCOMPARE(doc_->undoStack()->index(), before + 3);

    // A value that is no number is refused, named, logged, and changes nothing.
    QSignalSpy log(doc_, &ProjectDocument::message);
    typeInto(find<QLineEdit>("dataSeed"), "abc");
    QTest::keyClick(find<QLineEdit>("dataSeed"), Qt::Key_Return);
    QCOMPARE(doc_->undoStack()->index(), before + 3);
    QVERIFY(!log.isEmpty());
    VERIFY_CONTAINS(log.last().at(1).toString(), "data.seed");
    VERIFY_CONTAINS(label("error:data")->text(), "data.seed: expected a whole number");
    typeInto(find<QLineEdit>("dataSeed"), "7");
    QTest::keyClick(find<QLineEdit>("dataSeed"), Qt::Key_Return);
    QCOMPARE(doc_->project().data.seed, uint64_t(7));
    QCOMPARE(doc_->undoStack()->index(), before + 4);

    // Synthetic data starts from sizes that work, so the choice is one edit; a kind with labels
    // swaps the target shape for a class count.
    type->setFocus();
    QTest::keyClick(type, Qt::Key_Down);  // NumPy .npz (held: no file chosen)
    QTest::keyClick(type, Qt::Key_Down);
    QCOMPARE(type->currentText(), QString("Synthetic"));
    QCOMPARE(doc_->project().data.type, std::string("synthetic"));
    QCOMPARE(doc_->project().data.feature_shape, (Shape{16}));
    QVERIFY(visible(find<QLineEdit>("dataTargetShape")));
    QVERIFY(!visible(find<QLineEdit>("dataClasses")));
    QComboBox* kind = find<QComboBox>("dataKind");
    kind->setFocus();
    QTest::keyClick(kind, Qt::Key_Down);  // ones
    QTest::keyClick(kind, Qt::Key_Down);  // blobs
    QCOMPARE(doc_->project().data.kind, std::string("blobs"));
    QCOMPARE(doc_->project().data.classes, int64_t(10));
    QVERIFY(!doc_->project().data_json.contains("target_shape"));
    QVERIFY(visible(find<QLineEdit>("dataClasses")));
    typeInto(find<QLineEdit>("dataFeatureShape"), "28, 28");
    QTest::keyClick(find<QLineEdit>("dataFeatureShape"), Qt::Key_Return);
    QCOMPARE(doc_->project().data.feature_shape, (Shape{28, 28}));
    QVERIFY(doc_->design().ok());  // (28, 28) blobs with 10 classes fit fashion-mlp
    // The file written back holds the section.
    const Json saved = Json::parse(project::to_json_string(doc_->project()));
    QCOMPARE(saved["data"]["kind"], Json("blobs"));
    QCOMPARE(saved["data"]["feature_shape"], (Json{28, 28}));

    while (doc_->undoStack()->index() > before) doc_->undoStack()->undo();
    QCOMPARE(type->currentText(), QString("Fashion-MNIST folder"));
    QCOMPARE(doc_->project().data.type, std::string("fashion_mnist"));
    QVERIFY(visible(find<QLineEdit>("dataDir")));
    QVERIFY(!visible(find<QComboBox>("dataKind")));
  }

  // An .npz archive (as np.savez_compressed or Keras's mnist.npz writes one), chosen through the
  // section's file dialog: one edit, a path relative to the project, its splits found by name.
  void dataSectionReadsAnNpzArchivePickedInItsDialog() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QString projectFile = tmp.filePath("fashion.shardlab.json");
    doc_->saveAs(projectFile);
    std::vector<uint8_t> train(200 * 28 * 28), test(10 * 28 * 28), trainLabels(200), testLabels(10);
    for (size_t i = 0; i < train.size(); ++i) train[i] = uint8_t(i % 251);
    for (size_t i = 0; i < trainLabels.size(); ++i) trainLabels[i] = uint8_t(i % 10);
    for (size_t i = 0; i < testLabels.size(); ++i) testLabels[i] = uint8_t(9 - i % 10);
    auto bytes = [](const QByteArray& b) { return testing::Bytes(b.begin(), b.end()); };
    QDir().mkpath(tmp.filePath("data"));
    writeFile(tmp.filePath("data/fashion.npz"),
              [&] {
                const testing::Bytes zip = testing::zip_bytes({{"x_train.npy", bytes(npyBytes("|u1", "(200, 28, 28)", train)), true},
                                                               {"y_train.npy", bytes(npyBytes("|u1", "(200,)", trainLabels))},
                                                               {"x_test.npy", bytes(npyBytes("|u1", "(10, 28, 28)", test)), true},
                                                               {"y_test.npy", bytes(npyBytes("|u1", "(10,)", testLabels))}});
                return QByteArray(reinterpret_cast<const char*>(zip.data()), qsizetype(zip.size()));
              }());

    QComboBox* type = find<QComboBox>("dataType");
    type->setFocus();
    for (int i = 0; i < 3; ++i) QTest::keyClick(type, Qt::Key_Down);  // IDX, .npy, .npz
    QCOMPARE(type->currentText(), QString("NumPy .npz file"));
    VERIFY_CONTAINS(label("dataPending")->text(), "file");
    const int before = doc_->undoStack()->index();
    testing::answerNextFileDialog(tmp.filePath("data/fashion.npz"));
    QTest::mouseClick(find<QWidget>("dataFileBrowse"), Qt::LeftButton);
    QTRY_COMPARE(doc_->project().data.type, std::string("npz"));
    QCOMPARE(doc_->project().data_json["file"], Json("data/fashion.npz"));
    QCOMPARE(doc_->undoStack()->index(), before + 1);
    VERIFY_CONTAINS(label("dataFound")->text(), "200 training examples of (28, 28) with class labels 0-9; 10 test examples");
    QVERIFY2(doc_->design().ok(), doc_->design().errors.empty() ? "" : doc_->design().errors.front().c_str());
  }

  // Attend's table is the Embed's: its row says whose, and shows that array's sharding.
  void aSharedParameterShowsItsOwnersSharding() {
    open("llama-tiny.shardlab.json");
    QVERIFY(doc_->edit("tie", [](project::Project& p) {
      graph::Node* head = p.graph.find("head");
      head->type = "Attend";
      head->params = Json{{"embed", "embed"}};
      head->param_axes = Json::object();
    }));
    QVERIFY2(doc_->design().ok(), doc_->design().errors.empty() ? "" : doc_->design().errors.front().c_str());
    doc_->setSelection({"head"});
    VERIFY_CONTAINS(label("shape:embedding")->text(), "shared with embed/embedding");
    const QString sharding = label("sharding:embedding")->text();
    VERIFY_CONTAINS(sharding, "href=\"embed/embedding\"");
    const sharding::ArraySharding* owner = doc_->design().sharding.find("embed/embedding");
    QVERIFY(owner);
    VERIFY_CONTAINS(sharding, QString::fromStdString(owner->spec_text()).toHtmlEscaped());
  }

  void nodeInsideARepeatBlock() {
    open("dot-relu-dot.shardlab.json");
    doc_->setSelection({"blocks/W1"});
    QCOMPARE(find<QLineEdit>("field:features")->text(), QString("1024"));
    QCOMPARE(find<QLineEdit>("axes:kernel")->text(), QString("embed, hidden"));
    VERIFY_CONTAINS(label("shape:kernel")->text(), "(embed 1024, hidden 1024)");
    VERIFY_CONTAINS(label("sharding:kernel")->text(), "model");
    QVERIFY(!shown(label("nodeError")));
    // W1's width is free (W2 maps back), so that edit is fine.
    typeInto(find<QLineEdit>("field:features"), "512");
    QCOMPARE(node("blocks/W1").params["features"], Json(512));
    QVERIFY(!shown(label("nodeError")));
    VERIFY_CONTAINS(label("shape:kernel")->text(), "(embed 1024, hidden 512)");
    // W2's is not: the block's output must match its input. The edit stays and the node says why.
    doc_->setSelection({"blocks/W2"});
    typeInto(find<QLineEdit>("field:features"), "512");
    QCOMPARE(node("blocks/W2").params["features"], Json(512));
    QVERIFY(shown(label("nodeError")));
    VERIFY_CONTAINS(label("nodeError")->text(), "block 'blocks'");
    VERIFY_CONTAINS(label("nodeError")->text(), "differs from its input");

    doc_->setSelection({"blocks"});
    QCOMPARE(find<QLineEdit>("field:count")->text(), QString("4"));
  }

  // In a small window (1024x640) the Inspector dock scrolls a page taller than itself, and no
  // part of a page is cut off at the side: every field is as wide as it needs, inside the view.
  void theInspectorScrollsInASmallWindow_data() {
    QTest::addColumn<QStringList>("selection");
    QTest::addColumn<QSize>("window");
    QTest::addColumn<bool>("scrolls");  // the page is taller than the dock there
    for (const QSize size : {QSize(1024, 640), QSize(900, 420)}) {
      const QString at = QString(" at %1x%2").arg(size.width()).arg(size.height());
      QTest::newRow(qPrintable("project" + at)) << QStringList{} << size << false;
      QTest::newRow(qPrintable("dense node" + at)) << QStringList{"dense1"} << size << (size.height() < 500);
      QTest::newRow(qPrintable("two dense nodes" + at)) << QStringList{"dense1", "dense2"} << size << false;
    }
  }
  void theInspectorScrollsInASmallWindow() {
    QFETCH(QStringList, selection);
    QFETCH(QSize, window);
    QFETCH(bool, scrolls);
    MainWindow w;
    QVERIFY(w.openFile(QStringLiteral(SHARDLAB_SOURCE_DIR "/projects/fashion-mlp.shardlab.json")));
    w.resize(window);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.document()->setSelection(selection);
    QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
    QApplication::processEvents();
    auto* inspector = w.findChild<Inspector*>("inspector");
    QVERIFY(inspector);
    QVERIFY(inspector->isVisible());
    QScrollArea* area = inspector->scrollArea();
    QWidget* page = inspector->page();
    QVERIFY(page);
    QCOMPARE(area->widget(), page);
    const QSize view = area->viewport()->size();
    QVERIFY2(view.height() > 80 && view.width() > 150, qPrintable(QString("%1x%2").arg(view.width()).arg(view.height())));
    // Vertically: the page has all the height it asks for; what the dock lacks, the scroll bar gives.
    QVERIFY(page->height() >= page->minimumSizeHint().height());
    QScrollBar* bar = area->verticalScrollBar();
    QCOMPARE(bar->maximum(), std::max(0, page->height() - view.height()));
    if (scrolls) QVERIFY2(page->minimumSizeHint().height() > view.height(), "the case meant to scroll fits");
    if (page->minimumSizeHint().height() > view.height()) {
      QVERIFY(bar->isVisible());
      bar->setValue(bar->maximum());
      QApplication::processEvents();
      QCOMPARE(page->mapTo(area->viewport(), QPoint(0, page->height())).y(), view.height());
    }
    // Across: the page is no wider than the view, and every visible field has its minimum width.
    QVERIFY2(page->width() <= view.width(), qPrintable(QString("page %1 wide in a view %2 wide").arg(page->width()).arg(view.width())));
    for (QWidget* child : page->findChildren<QWidget*>()) {
      if (!child->isVisibleTo(page) || child->minimumSizeHint().isEmpty()) continue;
      const QRect r(child->mapTo(page, QPoint(0, 0)), child->size());
      const QString name = child->objectName() + " (" + child->metaObject()->className() + ")";
      QVERIFY2(r.right() < page->width() + 1, qPrintable(name + " reaches past the page's right edge"));
      QVERIFY2(r.width() >= child->minimumSizeHint().width(),
               qPrintable(name + QString(" is %1 wide, needs %2").arg(r.width()).arg(child->minimumSizeHint().width())));
    }
  }

  void screenshot() {
    doc_->setSelection({"dense2"});
    QApplication::processEvents();
    QVERIFY(inspector_->grab().save(SHARDLAB_BINARY_DIR "/ui-screenshots/inspector.png"));
    // The same in a dark palette, for review that every label stays readable.
    QPalette dark;
    dark.setColor(QPalette::Window, QColor(45, 45, 48));
    dark.setColor(QPalette::WindowText, QColor(220, 220, 220));
    dark.setColor(QPalette::Base, QColor(30, 30, 32));
    dark.setColor(QPalette::Text, QColor(220, 220, 220));
    dark.setColor(QPalette::Button, QColor(45, 45, 48));
    dark.setColor(QPalette::ButtonText, QColor(220, 220, 220));
    dark.setColor(QPalette::PlaceholderText, QColor(140, 140, 140));
    dark.setColor(QPalette::Link, QColor(42, 130, 218));
    inspector_->setPalette(dark);
    typeInto(find<QLineEdit>("field:features"), "x");
    QApplication::processEvents();
    QVERIFY(inspector_->grab().save(SHARDLAB_BINARY_DIR "/ui-screenshots/inspector-dark.png"));
  }
};

QTEST_MAIN(TestInspector)
#include "test_inspector.moc"
