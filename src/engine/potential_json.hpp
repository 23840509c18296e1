// Internal to the potential reader (potential.cpp, potential_v2.cpp): the JSON helpers that make
// every rejection name the file and the defect, in the Python reader's wording.
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "potential.hpp"

namespace edgeframe::impl {

using json = nlohmann::json;

extern const std::array<const char*, 118> kElements;  // symbols of Z = 1..118

[[noreturn]] void fail(const std::string& path, const std::string& msg);  // throws FormatError
std::string show(const json& v);                                          // a value in Python's repr style, cut short
std::string join(const std::vector<std::string>& v);                      // at most 10 names
std::string join_all(const std::vector<std::string>& v);
bool is_int(const json& v);
bool is_number(const json& v);  // finite
void check_positive_int(const json& model, const std::string& key, int& out, int limit, const std::string& path);
void check_positive_number(const json& model, const std::string& key, double& out, const std::string& path);

// Model v2's config (format_version 2): fills pot.v2, pot.dtype, pot.provenance and returns the
// fields both versions share.
ModelConfig check_config_v2(const json& meta, Potential& pot, const std::string& path);

}  // namespace edgeframe::impl
