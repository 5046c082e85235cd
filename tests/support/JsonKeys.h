//===- JsonKeys.h - A JSON output's field names, pinned per schema version --===//
//
// Every JSON document deepum writes carries "schema", raised when a field is
// renamed or removed or changes meaning (docs/tools.md). Tests pin each
// output's key paths per schema version: a field dropped or renamed without
// raising the version fails, and so does a field added without pinning it
// (new fields keep the version, and are pinned beside the others).
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_TESTS_JSONKEYS_H
#define DEEPUM_TESTS_JSONKEYS_H

#include "llvm/Support/JSON.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace deepum::test {

/// Every key path of `V` ("launches.seen"); below a path in `Opaque` (an
/// object keyed by data: roles, migration directions) nothing is listed.
inline std::set<std::string> jsonKeyPaths(const llvm::json::Value &V,
                                          const std::set<std::string> &Opaque = {},
                                          const std::string &Prefix = "") {
  std::set<std::string> Out;
  const llvm::json::Object *O = V.getAsObject();
  if (!O)
    return Out;
  for (const auto &[Key, Sub] : *O) {
    const std::string Path = Prefix.empty() ? Key.str() : Prefix + "." + Key.str();
    Out.insert(Path);
    if (!Opaque.count(Path))
      for (const std::string &P : jsonKeyPaths(Sub, Opaque, Path))
        Out.insert(P);
  }
  return Out;
}

/// `V`'s key paths are exactly those pinned for its "schema".
inline void expectPinnedKeys(const llvm::json::Value &V,
                             const std::map<int64_t, std::set<std::string>> &Pinned,
                             const std::set<std::string> &Opaque, const std::string &What) {
  const llvm::json::Object *O = V.getAsObject();
  ASSERT_NE(O, nullptr) << What;
  llvm::Optional<int64_t> Schema = O->getInteger("schema");
  ASSERT_TRUE(Schema.hasValue()) << What << ": no schema";
  auto It = Pinned.find(*Schema);
  ASSERT_NE(It, Pinned.end()) << What << ": schema " << *Schema
                              << " has no pinned field names: pin them here";
  const std::set<std::string> Have = jsonKeyPaths(V, Opaque);
  for (const std::string &K : It->second)
    EXPECT_TRUE(Have.count(K)) << What << " schema " << *Schema << " lost '" << K
                               << "': keep it, or raise the schema version";
  for (const std::string &K : Have)
    EXPECT_TRUE(It->second.count(K)) << What << " schema " << *Schema << " has '" << K
                                     << "', not pinned: pin it (new fields keep the version)";
}

} // namespace deepum::test

#endif // DEEPUM_TESTS_JSONKEYS_H
