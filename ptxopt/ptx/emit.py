"""IR -> PTX text.

The printed form is canonical (one statement per line, tab indentation,
nvcc's ``opcode \\toperands`` spacing), deterministic and idempotent:
``emit(parse(emit(m))) == emit(m)``. Layout is the only thing it normalises;
every token that reaches ptxas is the one that was parsed.
"""

from __future__ import annotations

from ptxopt.ptx.identity_memo import IdentityMemo
from ptxopt.ptx.ir import (
    Addr,
    Block,
    Comment,
    Decl,
    Function,
    Imm,
    Instruction,
    Label,
    Loc,
    Module,
    Raw,
    Reg,
    Statement,
    Sym,
    format_init,
)


def emit(module: Module) -> str:
    if not isinstance(module, Module):
        raise TypeError(f"emit() takes a Module (from ptxopt.parse()), not {type(module).__name__}")
    out: list[str] = []
    for c in module.header_comments:
        _comment(out, c, "")
    out.append(f".version {module.version}")
    out.append(".target " + ", ".join(module.target))
    if module.address_size is not None:
        out.append(f".address_size {module.address_size}")
    for item in module.items:
        t = type(item)
        if t is Function:
            out.append("")
            emit_function(item, out)
        elif t is Comment:
            _comment(out, item, "")
        elif t is Decl:
            out.append(_decl(item))
        else:  # Raw
            out.append(item.text)
    out.append("")
    return "\n".join(out)


def emit_function(fn: Function, out: list[str]) -> None:
    out.extend(function_head(fn))
    if fn.body is None:
        out.append(";")
    else:
        _block(fn.body, out, "")


def function_head(fn: Function) -> list[str]:
    """The lines of ``fn`` before its body: linkage, kind, name, parameters, directives."""
    out: list[str] = []
    head = " ".join((*fn.linkage, fn.kind))
    if fn.attribute:
        head += " " + fn.attribute
    if fn.ret_params is not None:
        head += " (" + ", ".join(_decl_body(p) for p in fn.ret_params) + ")"
    head += " " + fn.name
    if fn.params is not None:
        if fn.params:
            out.append(head + "(")
            last = len(fn.params) - 1
            for i, p in enumerate(fn.params):
                out.append("\t" + _decl_body(p) + ("," if i < last else ""))
            out.append(")")
        else:
            out.append(head + "()")
    else:
        out.append(head)
    for d in fn.directives:
        line = d.name
        if d.args:
            line += " " + ", ".join(d.args)
        if any(a.startswith('"') for a in d.args):
            line += ";"
        out.append(line)
    return out


def _block(block: Block, out: list[str], indent: str) -> None:
    out.append(indent + "{")
    inner = indent + "\t"
    append = out.append
    # format_instruction's memo, read and filled inline (two calls less per line)
    memo, keep, room = _TEXT._entries, _TEXT._keep.append, _TEXT._max
    for s in block.items:
        t = type(s)
        if t is Instruction:
            text = memo.get(id(s))  # the memo keeps its instructions alive: an id found is this one
            if text is None:
                text = _format_instruction(s)
                if len(memo) >= room:
                    _TEXT.clear()
                memo[id(s)] = text  # IdentityMemo.put
                keep(s)
            append(inner + text)
        elif t is Label:
            append(s.name + ":")
        elif t is Decl:
            append(inner + _decl(s))
        elif t is Block:
            _block(s, out, inner)
        elif t is Comment:
            _comment(out, s, inner)
        else:  # Loc, Raw
            append(inner + s.text)
    out.append(indent + "}")


def _comment(out: list[str], c: Comment, indent: str) -> None:
    if c.trailing and out:
        out[-1] += "\t" + c.text
    else:
        out.append(indent + c.text)


#: printed text per instruction: a search state prints its ~20 candidate
#: modules, which share most instructions, mostly from here
_TEXT: IdentityMemo[Instruction, str] = IdentityMemo()


def format_instruction(ins: Instruction) -> str:
    return _TEXT.get(ins, _format_instruction)


def _format_instruction(ins: Instruction) -> str:
    s = ins.opcode
    if ins.modifiers:
        s += "." + ".".join(ins.modifiers)
    if ins.guard is not None:
        s = ("@!" if ins.guard_neg else "@") + ins.guard + " " + s
    if ins.operands:
        s += " \t" + ", ".join([o.name if type(o) is Reg else _op(o) for o in ins.operands]) + ";"
    else:
        s += ";"
    return s


def _op(o) -> str:
    t = type(o)
    if t is Reg:
        return o.name
    if t is Imm:
        return o.text
    if t is Addr:
        b = o.base
        inner = b.name if type(b) is Reg else str(b)
        if o.offset:
            inner += "+" + str(o.offset)
        elif o.plus_zero:
            inner += "+0"
        for e in o.extra:
            inner += ", " + _op(e)
        return "[" + inner + "]"
    if t is Sym and not o.offset and o.index is None:
        return o.name
    return str(o)


def _decl_body(d: Decl) -> str:
    s = " ".join(d.attrs)
    if d.items:
        s += " " + ", ".join(str(i) for i in d.items)
    if d.init is not None:
        s += " = " + format_init(d.init)
    return s


def _decl(d: Decl) -> str:
    return _decl_body(d) + ";"


__all__ = ["emit", "emit_function", "function_head", "format_instruction", "Statement", "Loc", "Raw"]
