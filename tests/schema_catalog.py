"""Read a database's schema back from its own catalog (SQLite pragmas, PostgreSQL pg_catalog),
not through the sqlmodel tables, so tests can compare it with a literal expectation.

`schema(conn)` gives, per table, each column as the database reports it ("VARCHAR NOT NULL",
"timestamp with time zone NOT NULL", "integer NOT NULL DEFAULT nextval(…)"), the primary key,
unique constraints (name → columns), foreign keys, and every other index with its column
order, DESC keys, uniqueness and partial WHERE. `definitions(conn)` gives the stored SQL of
every object, for proving two databases were built alike.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy.engine import Connection

Schema = dict[str, dict[str, Any]]


def schema(conn: Connection) -> Schema:
    if conn.dialect.name == "sqlite":
        return _sqlite(conn)
    return _postgres(conn)


def _column(type_: str, notnull: bool, default: str | None) -> str:
    return type_ + (" NOT NULL" if notnull else "") + (f" DEFAULT {default}" if default else "")


def _table(columns: dict[str, str]) -> dict[str, Any]:
    return {"columns": columns, "primary_key": "", "unique": {}, "foreign_keys": [],
            "indexes": {}}


def _space(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip()


def _sqlite(conn: Connection) -> Schema:
    q = conn.exec_driver_sql
    out: Schema = {}
    names = [r[0] for r in q("SELECT name FROM sqlite_master WHERE type = 'table' "
                             "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    for name in names:
        columns: dict[str, str] = {}
        pk: list[tuple[int, str]] = []
        for _cid, col, type_, notnull, default, pkpos, _hidden in q(
                f'PRAGMA table_xinfo("{name}")'):
            columns[col] = _column(type_, bool(notnull), default)
            if pkpos:
                pk.append((pkpos, col))
        table = _table(columns)
        table["primary_key"] = ", ".join(c for _, c in sorted(pk))
        for _seq, index, unique, origin, partial in list(q(f'PRAGMA index_list("{name}")')):
            keys = ", ".join(col + (" DESC" if desc else "")
                             for _n, _cid, col, desc, _coll, key in
                             q(f'PRAGMA index_xinfo("{index}")') if key)
            if origin == "pk":
                assert keys == table["primary_key"], (name, index)
            elif origin == "u":  # SQLite does not keep a UNIQUE constraint's name
                table["unique"][keys] = keys
            else:
                sql = q("SELECT sql FROM sqlite_master WHERE name = ?", (index,)).scalar_one()
                where = _space(re.split(r"\bWHERE\b", sql, maxsplit=1, flags=re.I)[1]) \
                    if partial else ""
                table["indexes"][index] = ("UNIQUE " if unique else "") + keys + \
                    (f" WHERE {where}" if where else "")
        fks: dict[int, list[Any]] = {}
        for fid, _seq, other, src, dst, on_update, on_delete, _match in q(
                f'PRAGMA foreign_key_list("{name}")'):
            fks.setdefault(fid, [other, [], [], on_update, on_delete])
            fks[fid][1].append(src)
            fks[fid][2].append(dst)
        table["foreign_keys"] = sorted(_fk(*fk) for fk in fks.values())
        out[name] = table
    return out


def _fk(other: str, src: list[str], dst: list[str], on_update: str, on_delete: str) -> str:
    text = f"{', '.join(src)} -> {other} ({', '.join(dst)})"
    for what, action in (("UPDATE", on_update), ("DELETE", on_delete)):
        if action.upper() not in ("NO ACTION", "A"):
            text += f" ON {what} {action}"
    return text


_PG_COLUMNS = """
SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
       pg_get_expr(d.adbin, d.adrelid)
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
  AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY c.relname, a.attnum
"""

_PG_CONSTRAINTS = """
SELECT c.relname, k.conname, k.contype,
       ARRAY(SELECT a.attname FROM unnest(k.conkey) WITH ORDINALITY u(n, i)
             JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n ORDER BY u.i),
       f.relname,
       ARRAY(SELECT a.attname FROM unnest(k.confkey) WITH ORDINALITY u(n, i)
             JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.n ORDER BY u.i),
       k.confupdtype, k.confdeltype
FROM pg_constraint k
JOIN pg_class c ON c.oid = k.conrelid
LEFT JOIN pg_class f ON f.oid = k.confrelid
WHERE c.relnamespace = current_schema()::regnamespace
ORDER BY c.relname, k.conname
"""

_PG_INDEXES = """
SELECT t.relname, i.relname, x.indisunique,
       ARRAY(SELECT pg_get_indexdef(x.indexrelid, n, true)
                    || CASE WHEN x.indoption[n - 1] & 1 = 1 THEN ' DESC' ELSE '' END
             FROM generate_series(1, x.indnkeyatts) n ORDER BY n),
       pg_get_expr(x.indpred, x.indrelid, true)
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
WHERE t.relnamespace = current_schema()::regnamespace
  AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid)
ORDER BY t.relname, i.relname
"""

_PG_ACTIONS = {"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL",
               "d": "SET DEFAULT"}


def _postgres(conn: Connection) -> Schema:
    q = conn.exec_driver_sql
    out: Schema = {}
    for table, col, type_, notnull, default in q(_PG_COLUMNS):
        out.setdefault(table, _table({}))["columns"][col] = _column(type_, notnull, default)
    for table, name, kind, cols, other, other_cols, on_update, on_delete in q(_PG_CONSTRAINTS):
        entry = out[table]
        if kind == "p":
            entry["primary_key"] = ", ".join(cols)
        elif kind == "u":
            entry["unique"][name] = ", ".join(cols)
        elif kind == "f":
            entry["foreign_keys"].append(_fk(other, cols, other_cols, _PG_ACTIONS[on_update],
                                             _PG_ACTIONS[on_delete]))
        else:  # a CHECK or EXCLUDE constraint: shown whole so a test sees it
            entry.setdefault("other", {})[name] = kind
    for table, index, unique, keys, where in q(_PG_INDEXES):
        out[table]["indexes"][index] = ("UNIQUE " if unique else "") + ", ".join(keys) + \
            (f" WHERE {where}" if where else "")
    for entry in out.values():
        entry["foreign_keys"].sort()
    return out


def definitions(conn: Connection) -> list[tuple[Any, ...]]:
    """Every schema object with its stored definition, in a stable order (SQLite: the
    sqlite_master rows in creation order, SQL as stored; PostgreSQL: tables' columns,
    constraints with pg_get_constraintdef, indexes with pg_get_indexdef, sequences)."""
    q = conn.exec_driver_sql
    if conn.dialect.name == "sqlite":
        return [tuple(r) for r in q("SELECT type, name, tbl_name, sql FROM sqlite_master "
                                    "ORDER BY rowid")]
    rows: list[tuple[Any, ...]] = [("column", *r) for r in q(_PG_COLUMNS)]
    rows += [("constraint", *r) for r in q(
        "SELECT c.relname, k.conname, pg_get_constraintdef(k.oid) FROM pg_constraint k "
        "JOIN pg_class c ON c.oid = k.conrelid "
        "WHERE c.relnamespace = current_schema()::regnamespace ORDER BY 2, 3")]
    rows += [("index", *r) for r in q(
        "SELECT tablename, indexname, indexdef FROM pg_indexes "
        "WHERE schemaname = current_schema() ORDER BY 2")]
    rows += [("sequence", *r) for r in q(
        "SELECT sequencename, data_type::text, start_value, increment_by "
        "FROM pg_sequences WHERE schemaname = current_schema() ORDER BY 1")]
    return rows
