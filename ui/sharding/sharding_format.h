// Text and colours the sharding views share: how a shape, a set of logical axes, a block's range,
// a device set and a byte count read on screen, the colour a device set gets in every picture, and
// how many copies of each activation a training step keeps.
#pragma once

#include <QColor>
#include <QString>
#include <map>
#include <string>
#include <vector>

#include "engine/api/engine.h"

namespace shardlab::ui::shardfmt {

// "(4, 1024, 256)", as the engine and the CLI write shapes.
QString shapeText(const Shape& s);
// The process holding `device` when the mesh's `deviceCount` devices are laid over `processes`
// processes, as mpirun -np K runs them: process r holds devices r*L .. r*L+L-1, L = deviceCount / K.
// -1 when `processes` <= 1 or does not divide the devices (then nothing names processes).
int64_t processOf(int64_t device, int64_t deviceCount, int processes);
// Whether `processes` (>= 1) divides the mesh's `deviceCount` devices.
bool processesDivide(int64_t deviceCount, int processes);
// " (process 0)" / " (processes 0,1)": who holds a block, as the engine's render_sharding writes it;
// "" where processOf gives -1.
QString processesText(const std::vector<int64_t>& devices, int64_t deviceCount, int processes);
// "Device 3 (data 1, model 1)", and " — process 1" when the mesh is laid over processes.
QString deviceName(const sharding::Mesh& mesh, int64_t device, int processes = 1);
// "(layer, embed, hidden)"; an unnamed dimension reads "-".
QString logicalText(const std::vector<std::string>& names);
// "data+model", or "" for a replicated dimension.
QString axesText(const std::vector<std::string>& axes);
// "4.00 MiB", the engine's own format.
QString bytesText(double bytes);
// "4.00 MiB (4,194,304 bytes)", for tooltips where the exact count matters.
QString exactBytesText(double bytes);
// "CPU 0,4": the devices holding a block, as jax.debug.visualize_array_sharding labels it.
QString deviceLabel(const std::vector<int64_t>& devices, const QString& platform = QStringLiteral("CPU"));
// "0:4, 0:1024, 768:1024": a block's element range per dimension, end exclusive.
QString rangeText(const sharding::Block& b);
// "(0, 0, 3)": a block's index per dimension.
QString blockIndexText(const sharding::Block& b);
// "data 0, model 3": a device's coordinates on the mesh ("" on a mesh without axes).
QString deviceCoordsText(const sharding::Mesh& mesh, int64_t device);
// "Parameters", "Optimizer state", "Gradients", "Activations", "Inputs".
QString kindGroupName(sharding::ArrayKind k);
// "dim 2 (hidden, 1024)".
QString dimText(const sharding::ArraySharding& a, size_t dim);

// How many copies of each activation one step keeps: an activation inside a Repeat is kept once
// per layer. This follows the engine's per-device memory count (analyze_sharding), so a device's
// blocks times their copies add up to its DeviceMemory::total(). Every other array: one copy.
std::map<std::string, int64_t> activationCopies(const graph::GraphReport& report);

// The colour of a device set: the same set gets the same colour in every array and on every
// redraw; the sets of one array (disjoint, so with distinct lowest devices) get distinct hues.
// `dark` picks deeper tones for a dark palette.
QColor deviceSetColor(const std::vector<int64_t>& devices, bool dark);
// Black or white, whichever reads better on `fill`.
QColor readableTextOn(const QColor& fill);
// WCAG contrast ratio between two colours (1 to 21).
double contrastRatio(const QColor& a, const QColor& b);

}  // namespace shardlab::ui::shardfmt
