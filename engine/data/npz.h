// NumPy .npz archives, as np.savez and np.savez_compressed write them: a zip file holding one .npy
// image per array, stored or deflated, with ZIP64 records where a member is over 4 GiB.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "engine/data/npy.h"
#include "engine/tensor/tensor.h"

namespace shardlab::data {

// The names of the arrays the archive holds (each member's name without ".npy"), in its order.
// Throws shardlab::Error naming the file: missing, not a zip archive, a damaged directory.
std::vector<std::string> npz_keys(const std::filesystem::path& path);

// One array, converted to float. Throws naming the file and the array: no such array (listing those
// there are), a compression other than stored or deflate, a checksum or size that does not match.
Tensor load_npz(const std::filesystem::path& path, const std::string& key);
// Its header alone, and whether its dtype is an integer one (class labels).
NpyHeader read_npz_header(const std::filesystem::path& path, const std::string& key);

}  // namespace shardlab::data
