// The drag-and-drop format a layer type travels in from the palette to the canvas: the type's name
// ("Dense") as UTF-8.
#pragma once

namespace shardlab::ui {

inline constexpr const char* kLayerMimeType = "application/x-shardlab-layer";

}  // namespace shardlab::ui
