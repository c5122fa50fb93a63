// Finding what the design check says about one node: its report (a node inside a Repeat is in its
// Repeat's body reports), its error wherever it was recorded, and the sharding of its arrays.
#pragma once

#include <string>
#include <vector>

#include "engine/api/engine.h"

namespace shardlab::ui::lookup {

// The report of node `path` ("dense1", "blocks/W1"), or null when the check has none (the node
// failed to configure, or sits after an error).
const graph::NodeReport* report(const api::Design& d, const std::string& path);
// The reason the check gives for node `path`, without the "node '...': " prefix; for a node in a
// block with none of its own, the block's ("block 'blocks': ..."). Empty when there is none.
std::string nodeError(const api::Design& d, const std::string& path);
// The sharding of array `name` ("dense1/kernel", an activation "dense1"), or null.
const sharding::ArraySharding* array(const api::Design& d, const std::string& name);
// The default logical axes the layer gives parameter `param` of `node` (its own override left
// out, the others kept, since a default may follow another parameter's names), and the output's
// inferred names (its override left out). Empty when the layer cannot say (the node has errors).
std::vector<std::string> defaultParamAxes(const graph::Node& node, const graph::NodeReport& r, const std::string& param);
std::vector<std::string> inferredOutputAxes(const graph::Node& node, const graph::NodeReport& r);

}  // namespace shardlab::ui::lookup
