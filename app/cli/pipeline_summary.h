// What `check` and `shard` say of pipeline stages: each stage's layers and arena, the schedule and
// the bubble, as text and as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "engine/sharding/layout.h"

namespace shardlab::cli {

// Empty without a pipeline.
std::string pipeline_text(const sharding::ShardingReport& r);
nlohmann::ordered_json pipeline_json(const sharding::ShardingReport& r);

}  // namespace shardlab::cli
