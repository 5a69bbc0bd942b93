// The dashboard's static files (scheduler/server/http/web/), compiled into the binary
// by cmake/EmbedFiles.cmake, so an installed daemon needs no files beside it.
#pragma once

#include <cstddef>
#include <string_view>

namespace tailcut::dashboard {

struct EmbeddedFile {
  const char* path;  // relative to scheduler/server/http/web/, e.g. "app.js"
  const unsigned char* data;
  size_t size;
};
extern const EmbeddedFile kEmbeddedFiles[];
extern const size_t kEmbeddedFileCount;

// The file at `path` ("index.html"), null if none.
const EmbeddedFile* FindAsset(std::string_view path);
// By extension: text/html, text/javascript, text/css, else octet-stream.
const char* AssetContentType(std::string_view path);

}  // namespace tailcut::dashboard
