"""What an AMD prologue may not write: the registers the hardware preloads at a kernel's entry.

The prologue is moved above all compiler-generated code (amdgpu.py), so it runs
while the registers hold what the dispatch put there: the user SGPRs (the
kernarg segment pointer, the dispatch and queue pointers, the private segment
buffer, ...), the system SGPRs after them (the work-group IDs, the private
segment wave offset), the work-item IDs in v0-v2, and the execution mask. A
write to any of them breaks the kernel, silently; every other register is free
at entry (the kernel sets what it uses before reading it). All of v0-v2 and
every user SGPR the descriptor counts are kept, also where a kernel reads only
some of them.

Which registers each kernel has preloaded is read from its `.amdhsa_kernel`
descriptor in the emitted assembly (AMDGPUUsage, "Initial Kernel Execution
State": the user SGPRs in a fixed order from s0, the system SGPRs after
`.amdhsa_user_sgpr_count` of them). Which registers an instruction writes is
read from its operands: its first operand, unless it is one that writes none
(stores, compares, branches, waits, atomics that return nothing); the carry
or scale output of the VOP3b forms; exec for `*saveexec*`, `*wrexec*` and
`v_cmpx*`; both operands of `v_swap*`. `s_setreg*`, `s_denorm_mode` and
`s_round_mode` write hardware registers the descriptor initializes (the float
modes), and are refused as such.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import CodegenError

__all__ = ["EntryRegisters", "entry_registers", "check_writes", "written_registers"]

# The user SGPRs, in the order the hardware loads them from s0 (AMDGPUUsage), by descriptor directive.
_USER_SGPRS = (
    ("private_segment_buffer", 4, "private segment buffer"),
    ("dispatch_ptr", 2, "dispatch packet pointer"),
    ("queue_ptr", 2, "queue pointer"),
    ("kernarg_segment_ptr", 2, "kernarg segment pointer"),
    ("dispatch_id", 2, "dispatch ID"),
    ("flat_scratch_init", 2, "flat scratch init"),
    ("private_segment_size", 1, "private segment size"),
)
# The system SGPRs, in order after the user SGPRs.
_SYSTEM_SGPRS = (
    ("system_sgpr_workgroup_id_x", "work-group ID x"),
    ("system_sgpr_workgroup_id_y", "work-group ID y"),
    ("system_sgpr_workgroup_id_z", "work-group ID z"),
    ("system_sgpr_workgroup_info", "work-group info"),
)
_DIRECTIVE = re.compile(r"^\s*\.amdhsa_(\w+)\s+(\d+)", re.MULTILINE)


@dataclass(frozen=True)
class EntryRegisters:
    """One kernel's registers preloaded at entry: register name ("s0", "v1", "exec_lo") -> what it holds."""
    kernel: str
    roles: dict[str, str]

    def summary(self) -> str:
        """'s[0:1] kernarg segment pointer, s2 work-group ID x, v0 work-item IDs, exec execution mask'."""
        groups: list[tuple[str, list[str]]] = []
        for register, role in self.roles.items():
            if groups and groups[-1][0] == role:
                groups[-1][1].append(register)
            else:
                groups.append((role, [register]))
        return ", ".join(f"{_span(registers)} {role}" for role, registers in groups)


def entry_registers(kernel: str, descriptor: str) -> EntryRegisters:
    """The registers the hardware preloads for the kernel whose `.amdhsa_kernel` block is `descriptor`."""
    fields = {name: int(value) for name, value in _DIRECTIVE.findall(descriptor)}
    roles: dict[str, str] = {}
    user_count = fields.get("user_sgpr_count", 0)
    at = 0
    for name, size, role in _USER_SGPRS:
        if fields.get("user_sgpr_" + name):
            roles.update((f"s{at + i}", role) for i in range(size))
            at += size
    preloaded = fields.get("user_sgpr_kernarg_preload_length", 0)
    roles.update((f"s{at + i}", "preloaded kernel arguments") for i in range(preloaded))
    at += preloaded
    if at > user_count:  # a layout this reading does not know: every user SGPR is the kernel's
        roles = {f"s{i}": "user SGPR data" for i in range(at)}
    roles.update((f"s{i}", "user SGPR data") for i in range(at, user_count))  # loaded too (gfx11 counts 15)
    at = max(at, user_count)
    for name, role in _SYSTEM_SGPRS:
        if fields.get(name):
            roles[f"s{at}"] = role
            at += 1
    if fields.get("system_sgpr_private_segment_wavefront_offset") or fields.get("enable_private_segment"):
        roles[f"s{at}"] = "private segment wave offset"
    # v0-v2 whichever the descriptor enables (targets that pack the IDs put them all in v0): all three kept
    roles.update((f"v{i}", "work-item IDs") for i in range(max(fields.get("system_vgpr_workitem_id", 0), 2) + 1))
    roles.update({"exec_lo": "execution mask", "exec_hi": "execution mask"})
    if fields.get("enable_private_segment") or fields.get("user_sgpr_flat_scratch_init"):
        roles.update({"flat_scratch_lo": "flat scratch base", "flat_scratch_hi": "flat scratch base"})
    return EntryRegisters(kernel, roles)


def check_writes(prologue: str, entries: list[EntryRegisters], target: str) -> None:
    """CodegenError naming the first prologue instruction that writes a register some kernel has preloaded
    at entry (or a hardware register its descriptor initializes), the register, and what it holds."""
    for line in prologue.splitlines():
        statement = _statement(line)
        if not statement:
            continue
        mnemonic = statement.split(None, 1)[0].lower()
        if mnemonic.startswith(("s_setreg", "s_denorm_mode", "s_round_mode")):
            raise CodegenError(
                f"prologue instruction {statement!r} writes a hardware register ({mnemonic}): the float modes and "
                "the other state the kernel's descriptor sets at entry, which the prologue runs before the "
                "kernel's code and must leave as they are; expected a prologue that writes no hardware register")
        for written in written_registers(statement):
            for entry in entries:
                held = [r for r in _expand(written) if r in entry.roles]
                if held:
                    role = entry.roles[held[0]]
                    raise CodegenError(
                        f"prologue instruction {statement!r} writes {written}, which holds the {role} of kernel "
                        f"{entry.kernel!r} ({target}) at entry: the prologue runs before the kernel's code, so it "
                        f"must not write what the hardware preloads (here {entry.summary()}); expected a prologue "
                        "that writes other registers")


def written_registers(statement: str) -> list[str]:
    """The registers (as written: 's[0:1]', 'v3', 'exec') one AMDGPU assembly statement writes."""
    mnemonic, _, rest = statement.strip().partition(" ")
    mnemonic = mnemonic.lower()
    operands = [_first_word(o).lower() for o in _split_operands(rest)]
    written = []
    if operands and not _writes_no_operand(mnemonic, rest.lower()):
        first = operands[0]
        if not mnemonic.startswith("v_cmp") or _is_scalar(first):  # a compare writes vcc or an SGPR, never a VGPR
            written.append(first)
    if _CARRY_OUT.match(mnemonic) and len(operands) >= 4:
        written.append(operands[1])  # the VOP3b carry / scale output (vcc or an SGPR pair)
    if mnemonic.startswith("v_swap") and len(operands) >= 2:
        written.append(operands[1])
    if "saveexec" in mnemonic or "wrexec" in mnemonic or mnemonic.startswith("v_cmpx"):
        written.append("exec")
    return [w for w in written if _expand(w)]


# Instructions with a second output: carry-out or the scale flag (VOP3b), as `v_add_co_u32 v0, vcc, v1, v2`.
_CARRY_OUT = re.compile(r"v_(?:add|sub|subrev)(?:c|b|brev)?(?:_co)?(?:_ci)?_u32|v_div_scale_"
                        r"|v_mad_(?:co_)?[iu]64_[iu]32")
# Mnemonics whose operands are all read (no register written), by prefix.
_NO_WRITE_PREFIXES = (
    "s_cmp", "s_bitcmp", "s_cbranch", "s_branch", "s_setpc", "s_set_gpr_idx", "s_sendmsg", "s_nop", "s_sleep",
    "s_trap", "s_endpgm", "s_barrier", "s_waitcnt", "s_wait_", "s_icache_inv", "s_dcache", "s_setprio", "s_setkill",
    "s_ttrace", "s_delay_alu", "s_clause", "s_inst_prefetch", "s_set_inst_prefetch", "s_code_end", "s_incperflevel",
    "s_decperflevel", "s_atc_probe", "s_singleuse", "s_sethalt", "s_setvskip", "s_version", "exp", "ds_gws",
    "ds_nop", "ds_barrier", "buffer_wb", "buffer_inv", "buffer_gl", "v_nop", "s_call",
)


def _writes_no_operand(mnemonic: str, rest: str) -> bool:
    """Whether the instruction's first operand is read, not written (stores, compares, waits, atomics that
    return nothing: no `glc`, `sc0` or TH_ATOMIC_RETURN)."""
    if mnemonic.startswith(_NO_WRITE_PREFIXES) or "store" in mnemonic or mnemonic.startswith("ds_write"):
        return True
    if "_atomic" in mnemonic:
        return not re.search(r"\b(?:glc|sc0)\b|th_atomic_return", rest)
    if mnemonic.startswith("ds_"):  # LDS: reads, appends and swizzles return; its atomics only as _rtn
        returns = ("ds_read", "ds_load", "ds_append", "ds_consume", "ds_swizzle", "ds_permute", "ds_bpermute",
                   "ds_ordered_count", "ds_bvh")
        return not (mnemonic.startswith(returns) or "_rtn" in mnemonic)
    return False


def _statement(line: str) -> str:
    """A line's instruction: comments, a label and directives dropped ('' when none is left)."""
    code = line.split(";")[0].split("//")[0].strip()
    code = re.sub(r"^[A-Za-z_.$][\w.$]*:\s*", "", code)
    return "" if not code or code.startswith(".") else code


def _split_operands(text: str) -> list[str]:
    """Comma-separated operands, commas inside [] and () kept (register lists, hwreg(...))."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _first_word(operand: str) -> str:
    """An operand without the modifiers after it ('off glc' -> 'off'); a register list stays whole."""
    operand, depth = operand.strip(), 0
    for i, c in enumerate(operand):
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
        elif c.isspace() and depth == 0:
            return operand[:i]
    return operand


_RANGE = re.compile(r"([sva])\[(\d+)(?::(\d+))?\]")
_SINGLE = re.compile(r"([sva])(\d+)")
_PAIRS = {"exec": ("exec_lo", "exec_hi"), "vcc": ("vcc_lo", "vcc_hi"),
          "flat_scratch": ("flat_scratch_lo", "flat_scratch_hi")}


def _expand(register: str) -> list[str]:
    """'s[0:1]' -> ['s0', 's1']; 'exec' -> ['exec_lo', 'exec_hi']; a list '[s0,s1]' too; [] for a non-register."""
    register = register.strip().lower()
    if register.startswith("[") and register.endswith("]"):
        return [r for part in register[1:-1].split(",") for r in _expand(part)]
    match = _RANGE.fullmatch(register)
    if match:
        first = int(match[2])
        last = int(match[3]) if match[3] is not None else first
        return [f"{match[1]}{n}" for n in range(first, last + 1)]
    if _SINGLE.fullmatch(register):
        return [register]
    if register in _PAIRS:
        return list(_PAIRS[register])
    if register in ("exec_lo", "exec_hi", "vcc_lo", "vcc_hi", "flat_scratch_lo", "flat_scratch_hi", "m0"):
        return [register]
    return []


def _is_scalar(register: str) -> bool:
    return any(r.startswith(("s", "exec", "vcc", "flat", "m0")) for r in _expand(register))


def _span(registers: list[str]) -> str:
    """['s0', 's1'] -> 's[0:1]'; ['v0'] -> 'v0'; ['exec_lo', 'exec_hi'] -> 'exec'."""
    if registers == ["exec_lo", "exec_hi"]:
        return "exec"
    if registers == ["flat_scratch_lo", "flat_scratch_hi"]:
        return "flat_scratch"
    numbers = [int(r[1:]) for r in registers if _SINGLE.fullmatch(r)]
    if len(numbers) == len(registers) and len(registers) > 1 and len({r[0] for r in registers}) == 1:
        if numbers == list(range(numbers[0], numbers[0] + len(numbers))):
            return f"{registers[0][0]}[{numbers[0]}:{numbers[-1]}]"
    return ", ".join(registers)
