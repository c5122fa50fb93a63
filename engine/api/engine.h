// Everything the desktop UI may use of the engine, in one place: the UI includes this (and only Help
// > About, engine/api/build_info.h) and nothing else under engine/, so what the UI depends on is
// visible and the engine stays free to change the rest.
#pragma once

#include "engine/api/advice.h"
#include "engine/api/data_summary.h"
#include "engine/api/design.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/export.h"
#include "engine/checkpoint/listing.h"
#include "engine/checkpoint/run_identity.h"
#include "engine/graph/analysis.h"
#include "engine/graph/catalog.h"
#include "engine/profiler/peak.h"
#include "engine/profiler/trace.h"
#include "engine/profiler/trace_file.h"
#include "engine/project/limits.h"
#include "engine/project/project.h"
#include "engine/runtime/trainer.h"
#include "engine/sharding/axis_names.h"
#include "engine/sharding/layout.h"
#include "engine/sharding/logical_rules.h"
#include "engine/sharding/mesh.h"
#include "engine/sharding/partition_spec.h"
#include "engine/sharding/presets.h"
#include "engine/sharding/visualize.h"
#include "engine/util/error.h"
#include "engine/util/output_file.h"
