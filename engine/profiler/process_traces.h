// One Chrome trace of a run over several processes: each process's own trace (Trace::to_chrome_json,
// its devices' tracks named by global device id) becomes one trace process, "shardlab process r",
// shifted onto process 0's clock by when each trace began, so every global device has its track
// and the processes' steps line up.
#pragma once

#include <string>
#include <vector>

namespace shardlab::profiler {

// `traces[r]`: process r's Chrome JSON; `origins_unix_us[r]`: its Trace::origin_unix_us().
std::string merge_process_traces(const std::vector<std::string>& traces, const std::vector<double>& origins_unix_us);

}  // namespace shardlab::profiler
