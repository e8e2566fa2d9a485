// The rowfuse kernel's PTX entry, adapted to IREE's CUDA dispatch ABI.
//
// The CuTe DSL exports each kernel with eight parameters (a package's kernels/<name>.ptx):
//   0 x   .param .align 8 .b8 [16]   { void *data; int32_t rows; 4 bytes padding }
//   1 w1  .param .align 8 .b8 [8]    { void *data }
//   2 b1, 3 w2, 4 b2                 the same [8]
//   5 h   [16], 6 y [16]             like x: pointer + the dynamic row extent
//   7 rows .param .u32
// IREE's CUDA HAL launches a dispatch with one 8-byte slot per binding (the device
// pointer) followed by one slot per 32-bit constant, and passes slot i as parameter i.
// An [8] struct holding one pointer is byte-for-byte that slot. A [16] struct is not: the
// driver would copy 16 bytes, the second 8 from the next slot. The generated code reads
// only the pointer of every struct (`ld.param.b64 %rd, [<entry>_param_i]`, offset 0; the
// row count comes from parameter 7), so the entry is rewritten to declare every tensor
// parameter `.param .u64`: the same bytes at the same offsets for everything the kernel
// reads. Any read past a struct's pointer, an address taken, another parameter list or
// another block size is refused, so a future generator that does use the extent fails
// here rather than in a launch.
#include "Internal.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

namespace rowfuse {

namespace {
struct Param {
    std::string name;
    std::string type; // "b8", "u64", "u32", ...
    int64_t bytes;    // array length for b8, else the scalar's size
    bool aggregate;
};

bool parseParam(llvm::StringRef text, Param &p) {
    static const llvm::Regex re(
        "^\\.param[ \t]+(\\.align[ \t]+[0-9]+[ \t]+)?\\.([a-z0-9]+)[ \t]+([A-Za-z0-9_$]+)"
        "(\\[([0-9]+)\\])?$");
    llvm::SmallVector<llvm::StringRef, 6> m;
    if (!re.match(text.trim(), &m))
        return false;
    p.type = m[2].str();
    p.name = m[3].str();
    p.aggregate = !m[5].empty();
    if (p.aggregate)
        return !m[5].getAsInteger(10, p.bytes);
    p.bytes = p.type.size() > 1 ? std::atoi(p.type.c_str() + 1) / 8 : 0;
    return true;
}
} // namespace

bool adaptPtxEntry(llvm::StringRef ptx, llvm::StringRef entry, int64_t threads, std::string &out,
                   std::string &why) {
    static const llvm::Regex entryRe("\\.entry[ \t]+([A-Za-z0-9_$]+)[ \t]*\\(");
    llvm::SmallVector<llvm::StringRef, 2> m;
    if (!entryRe.match(ptx, &m)) {
        why = "no .entry in the PTX";
        return false;
    }
    std::string oldName = m[1].str();
    size_t open = ptx.find(m[0]) + m[0].size();
    if (entryRe.match(ptx.substr(open))) {
        why = "more than one .entry in the PTX (one kernel per file expected)";
        return false;
    }
    size_t close = ptx.find(')', open);
    if (close == llvm::StringRef::npos) {
        why = "unterminated parameter list of " + oldName;
        return false;
    }
    llvm::SmallVector<llvm::StringRef, 8> decls;
    ptx.slice(open, close).split(decls, ',', -1, false);
    std::vector<Param> params(decls.size());
    for (size_t i = 0; i < decls.size(); i++)
        if (!parseParam(decls[i], params[i])) {
            why = "unparsed parameter '" + decls[i].trim().str() + "'";
            return false;
        }
    if (params.size() != 8) {
        why = "the entry has " + std::to_string(params.size()) +
              " parameters; the kernel ABI has 8 (x, w1, b1, w2, b2, h, y as pointers, rows)";
        return false;
    }
    for (size_t i = 0; i < 7; i++) {
        const Param &p = params[i];
        bool pointer = (p.aggregate && p.type == "b8" && (p.bytes == 8 || p.bytes == 16)) ||
                       (!p.aggregate && p.bytes == 8);
        if (!pointer) {
            why = "parameter " + std::to_string(i) + " (" + p.name +
                  ") does not start with a device pointer (." + p.type + ", " +
                  std::to_string(p.bytes) + " bytes)";
            return false;
        }
    }
    if (params[7].aggregate || params[7].bytes != 4) {
        why = "parameter 7 (" + params[7].name + ") is not the 32-bit row count";
        return false;
    }
    // Every use of a struct parameter must load its first 8 bytes and nothing else.
    llvm::StringRef body = ptx.substr(close);
    for (size_t i = 0; i < 7; i++) {
        if (!params[i].aggregate)
            continue;
        const std::string &name = params[i].name;
        for (size_t at = body.find(name); at != llvm::StringRef::npos;
             at = body.find(name, at + 1)) {
            size_t end = at + name.size();
            if (end < body.size() && (llvm::isAlnum(body[end]) || body[end] == '_'))
                continue; // a longer name
            size_t bol = body.rfind('\n', at);
            llvm::StringRef line =
                body.slice(bol == llvm::StringRef::npos ? 0 : bol + 1, body.find('\n', at));
            bool loadsPointer = (line.contains("ld.param.b64") || line.contains("ld.param.u64")) &&
                                end < body.size() && body[end] == ']' && at > 0 &&
                                body[at - 1] == '[';
            if (!loadsPointer) {
                why = "parameter " + std::to_string(i) +
                      " is used beyond its pointer (IREE passes only the pointer): '" +
                      line.trim().str() + "'";
                return false;
            }
        }
    }
    static const llvm::Regex reqntid(
        "\\.reqntid[ \t]+([0-9]+)([ \t]*,[ \t]*([0-9]+))?([ \t]*,[ \t]*([0-9]+))?");
    llvm::SmallVector<llvm::StringRef, 6> r;
    if (reqntid.match(body, &r)) {
        int64_t x = 0, y = 1, z = 1;
        r[1].getAsInteger(10, x);
        if (!r[3].empty())
            r[3].getAsInteger(10, y);
        if (!r[5].empty())
            r[5].getAsInteger(10, z);
        if (x * y * z != threads) {
            why = ".reqntid " + std::to_string(x) + "x" + std::to_string(y) + "x" +
                  std::to_string(z) + " differs from the kernel's " + std::to_string(threads) +
                  " threads";
            return false;
        }
    }
    std::string list = "\n";
    for (size_t i = 0; i < 8; i++)
        list += "\t.param ." + std::string(i < 7 ? "u64 " : "u32 ") + params[i].name +
                (i < 7 ? ",\n" : "\n");
    std::string result = (ptx.substr(0, open) + list + ptx.substr(close)).str();
    // Rename the entry (and with it its parameters, which carry its name as prefix).
    out.clear();
    llvm::StringRef rest(result);
    for (size_t at = rest.find(oldName); at != llvm::StringRef::npos; at = rest.find(oldName)) {
        out += rest.substr(0, at).str();
        out += entry.str();
        rest = rest.substr(at + oldName.size());
    }
    out += rest.str();
    return true;
}

} // namespace rowfuse
