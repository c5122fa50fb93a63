// Hardware profiles as files a user can read and edit (JSON, "format": "shardlab.hardware"): the
// written ones that ship with Shardlab (an H100 SXM node, H100 nodes over InfiniBand), this
// machine's calibration saved under the user's config folder, and any file named by path.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/advisor/hardware.h"

namespace shardlab::backends {
class Backend;
}

namespace shardlab::advisor {

// Errors name `where` (the file) and the field at fault.
Hardware hardware_from_json(const nlohmann::json& j, const std::string& where);
nlohmann::ordered_json hardware_to_json(const Hardware& h);

// The profiles that ship with Shardlab, by name ("h100-sxm-node", "h100-infiniband"), as their files'
// text: defined in the file engine/CMakeLists.txt generates from resources/hardware/*.json.
std::vector<std::pair<std::string, std::string>> bundled_profiles();

// A profile named on the command line: a file path (anything with a '/' or ending in .json), else
// a name in the user's folder (user_profile_dir()), else a bundled profile. Throws Error listing the
// names there are.
Hardware find_hardware(const std::string& name_or_path);
Hardware load_hardware_file(const std::string& path);
void save_hardware_file(const Hardware& h, const std::string& path);  // written atomically

// $XDG_CONFIG_HOME/shardlab/hardware (~/.config/shardlab/hardware).
std::string user_profile_dir();
// Where `calibrate` saves this machine's profile: this-machine.json in user_profile_dir().
std::string saved_calibration_path();

// This machine's CPU as `cpu` runs it for up to `devices` devices: the saved calibration when it was
// measured on this CPU with these cores for at least that many devices, else calibrated now (a few
// seconds) and saved. `calibrated_now` says which.
Hardware this_machine(backends::Backend& cpu, int devices, bool* calibrated_now = nullptr);

}  // namespace shardlab::advisor
