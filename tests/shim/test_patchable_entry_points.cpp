// SPDX-License-Identifier: MIT OR GPL-2.0-only
//
// What gdrhook's dlsym() hands out for an interposed CUDA symbol is its own
// exported wrapper (docs/interposition.md), and UCX's "bistro" mode patches
// whatever its dlsym() returned: it writes a 5-byte jump over the first
// bytes and runs them, relocated, from a copy. UCX 1.22's relocator knows
// only a few instructions (push of a register, `sub $imm, %rsp`,
// `mov %rsp, %rbp`, `mov %reg, disp(%rsp)`, `mov $imm32, %reg`, a compare
// with a RIP-relative operand, a short conditional jump); on anything
// else it gives up, logs "failed to patch", and turns its caches off. Seen
// on the GPU machine: the wrappers began `push %r12; mov %rdi, %r12`, and
// the second cannot be relocated. The shim's wrappers are built with frame
// pointers (hook/meson.build) so that each begins `push %rbp;
// mov %rsp, %rbp`; this test reads the built shim and checks that the
// first 5 bytes of every exported CUDA function decode as such
// instructions.
#include "program_runs.h"

#include <elf.h>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

// The length of the instruction at `code` if UCX's relocator takes it,
// else 0.
size_t relocatable_length(const uint8_t *code, size_t available)
{
    size_t at = 0;
    auto next = [&]() -> int { return at < available ? code[at++] : -1; };
    int rex = 0, op = next();
    if ((op & 0xf0) == 0x40) {
        rex = op;
        op = next();
    }
    if (op < 0)
        return 0;
    if ((rex == 0 || rex == 0x41) && (op & 0xf8) == 0x50) // push %reg
        return at;
    if (rex == 0x48 && (op == 0x81 || op == 0x83)) { // sub $imm, %rsp
        if (next() != 0xec)
            return 0;
        at += op == 0x83 ? 1 : 4;
        return at <= available ? at : 0;
    }
    if (rex == 0x48 && op == 0x89) { // mov %reg, r/m64
        const int modrm = next();
        if (modrm == 0xe5) // mov %rsp, %rbp
            return at;
        const int mod = modrm >> 6;
        if (modrm < 0 || (modrm & 7) != 4 || (mod != 1 && mod != 2))
            return 0; // only disp8/disp32(%reg-with-SIB)
        at += 1 + (mod == 1 ? 1 : 4);
        return at <= available ? at : 0;
    }
    if (rex == 0 && (op & 0xf8) == 0xb8) // mov $imm32, %reg
        return at + 4 <= available ? at + 4 : 0;
    if (rex == 0 && op == 0x81 && next() == 0x3d) // cmpl $imm32, disp32(%rip)
        return at + 8 <= available ? at + 8 : 0;
    if (rex == 0 && op >= 0x70 && op <= 0x7f) // jcc rel8
        return at + 1 <= available ? at + 1 : 0;
    return 0;
}

struct Function {
    std::string name;
    std::vector<uint8_t> start; // its first bytes
};

// Every global function the shared object defines whose name starts with
// "cu" (cu* and cuda*), with its first 16 bytes.
std::vector<Function> exported_cuda_functions(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> image((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    REQUIRE(image.size() > sizeof(Elf64_Ehdr));
    const auto *header = reinterpret_cast<const Elf64_Ehdr *>(image.data());
    REQUIRE(header->e_ident[EI_CLASS] == ELFCLASS64);
    const auto *sections = reinterpret_cast<const Elf64_Shdr *>(image.data() + header->e_shoff);
    std::vector<Function> out;
    for (int i = 0; i < header->e_shnum; ++i) {
        if (sections[i].sh_type != SHT_DYNSYM)
            continue;
        const Elf64_Shdr &strings = sections[sections[i].sh_link];
        const auto *symbols =
            reinterpret_cast<const Elf64_Sym *>(image.data() + sections[i].sh_offset);
        const size_t count = sections[i].sh_size / sizeof(Elf64_Sym);
        for (size_t s = 0; s < count; ++s) {
            const Elf64_Sym &sym = symbols[s];
            const char *name =
                reinterpret_cast<const char *>(image.data() + strings.sh_offset + sym.st_name);
            if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
                sym.st_shndx >= header->e_shnum || std::string(name).rfind("cu", 0) != 0)
                continue;
            const Elf64_Shdr &text = sections[sym.st_shndx];
            const uint64_t offset = sym.st_value - text.sh_addr + text.sh_offset;
            REQUIRE(offset + 16 <= image.size());
            out.push_back(
                {name, std::vector<uint8_t>(image.begin() + offset, image.begin() + offset + 16)});
        }
    }
    return out;
}

} // namespace

TEST_CASE("every exported CUDA wrapper begins with instructions UCX's bistro can relocate")
{
    const std::vector<Function> functions = exported_cuda_functions(build_path("GDRHOOKTEST_SHIM"));
    REQUIRE(functions.size() > 50);
    std::string refused;
    for (const Function &f : functions) {
        size_t covered = 0;
        while (covered < 5) {
            const size_t n = relocatable_length(f.start.data() + covered, f.start.size() - covered);
            if (n == 0)
                break;
            covered += n;
        }
        if (covered < 5) {
            refused += f.name + " (";
            for (size_t i = 0; i < 6; ++i)
                refused += (i ? " " : "") + std::to_string(f.start[i]);
            refused += ") ";
        }
    }
    INFO("not relocatable, first bytes in decimal: " << refused);
    CHECK(refused.empty());
}
