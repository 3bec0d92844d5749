"""Server-rendered HTML of the "ACID tables" page: pure functions from the data layer's
dataclasses (:mod:`acidflow_ui.data`) to strings. Inline CSS and inline SVG only (no scripts,
no external assets), every value escaped.

``base`` arguments are the URL prefix the app is mounted under (``"/acidflow"``), so links work
whatever the mount point.
"""

from __future__ import annotations

import html
from datetime import datetime
from typing import Iterable
from urllib.parse import quote

from .data import CommitRow, CompactionRow, LockRow, Overview, TableDetail, TableSummary, TxnRow

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2933;background:#f7f9fb}
header{background:#017cee;color:#fff;padding:10px 20px;display:flex;gap:24px;align-items:baseline}
header h1{font-size:18px;margin:0}header a{color:#fff;text-decoration:none;font-size:14px}
header a:hover{text-decoration:underline}
main{padding:12px 20px}
h2{font-size:16px;margin:20px 0 6px}
table{border-collapse:collapse;background:#fff;font-size:13px;margin-bottom:6px}
th,td{border:1px solid #d9e2ec;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef2f7;font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:#7b8794;font-size:12px}
.err{color:#b42318}
.state{border-radius:8px;padding:1px 7px;font-size:12px;white-space:nowrap}
.s-initiated,.s-waiting{background:#fff4ce}.s-working,.s-open{background:#dbeafe}
.s-ready-for-cleaning{background:#e0f2f1}.s-succeeded,.s-acquired,.s-committed{background:#dcfce7}
.s-failed,.s-aborted,.s-refused{background:#fee2e2}.s-did-not-initiate{background:#eee}
code{font-size:12px}
svg text{font-family:inherit}
"""

NBSP = "\u2014"


def e(value: object) -> str:
    """HTML-escape ``value`` (``None`` -> an em dash)."""
    return NBSP if value is None else html.escape(str(value), quote=True)


def fmt_time(value: datetime | None) -> str:
    """``YYYY-MM-DD HH:MM:SS`` UTC, or an em dash."""
    return NBSP if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def fmt_bytes(n: int | None) -> str:
    """Bytes with a binary unit (``1.5 KiB``); exact below 1 KiB."""
    if n is None:
        return NBSP
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def fmt_duration(seconds: float | None) -> str:
    """``0.4 s``, ``12 s``, ``3 min 5 s``, ``2 h 1 min`` or an em dash."""
    if seconds is None:
        return NBSP
    if seconds < 10:
        return f"{seconds:.1f} s"
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def state_badge(state: str) -> str:
    """A coloured ``<span>`` for a compaction / transaction / lock state."""
    cls = "s-" + "-".join(state.split())
    return f'<span class="state {e(cls)}">{e(state)}</span>'


def table_url(base: str, name: str) -> str:
    """URL of a table's page."""
    return f"{base}/tables/{quote(name, safe='')}"


def _table(
    headers: Iterable[str],
    rows: list[list[str]],
    numeric: set[int] = frozenset(),
    empty: str = "none",
    id_: str | None = None,
) -> str:
    """An HTML table; ``rows`` hold already-escaped cell HTML; ``numeric`` column indexes are
    right-aligned."""
    heads = list(headers)
    out = [f"<table{f' id={chr(34)}{e(id_)}{chr(34)}' if id_ else ''}><thead><tr>"]
    out += [f"<th>{e(h)}</th>" for h in heads]
    out.append("</tr></thead><tbody>")
    if not rows:
        out.append(f'<tr><td colspan="{len(heads)}" class="muted">{e(empty)}</td></tr>')
    for r in rows:
        out.append(
            "<tr>"
            + "".join(
                f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>"
                for i, c in enumerate(r)
            )
            + "</tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


def page(title: str, body: str, base: str, user: str | None = None) -> str:
    """A whole HTML document with the header navigation."""
    who = (
        f'<span class="muted" style="color:#dbeafe;margin-left:auto">{e(user)}</span>'
        if user
        else ""
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{e(title)}</title><style>{CSS}</style></head><body>"
        f'<header><h1>ACID tables</h1><a href="{e(base)}/">tables</a>'
        f'<a href="{e(base)}/#compactions">SHOW COMPACTIONS</a>'
        f'<a href="{e(base)}/#transactions">transactions</a>'
        f'<a href="{e(base)}/#locks">locks</a>{who}</header>'
        f"<main>{body}</main></body></html>"
    )


# -------------------------------------------------------------------------------- sections


def tables_section(tables: list[TableSummary], base: str) -> str:
    """The tables view."""
    rows = []
    for t in tables:
        last, queued = t.last_compaction, t.queued_compaction
        last_html = (
            NBSP
            if last is None
            else (f"{e(last.type)} {state_badge(last.state)} {e(fmt_time(last.ended_at))}")
        )
        if queued is not None:
            last_html += (
                f'<div class="muted">queued: {e(queued.type)} {state_badge(queued.state)}</div>'
            )
        open_html = str(t.open_txns)
        if t.open_write_ids:
            open_html += (
                f' <span class="muted">write ids {e(", ".join(map(str, t.open_write_ids)))}</span>'
            )
        rows.append(
            [
                f'<a href="{e(table_url(base, t.name))}">{e(t.name)}</a>'
                + (f'<div class="err">{e(t.error)}</div>' if t.error else ""),
                e(t.high_watermark),
                open_html,
                e(t.deltas),
                e(t.delete_deltas),
                e(fmt_bytes(t.base_bytes)),
                e(fmt_bytes(t.delta_bytes)),
                last_html,
            ]
        )
    return '<h2 id="tables">Tables</h2>' + _table(
        [
            "table",
            "high watermark",
            "open transactions",
            "deltas",
            "delete deltas",
            "base size",
            "delta size",
            "last compaction",
        ],
        rows,
        numeric={1, 3, 4, 5, 6},
        empty="no tables",
        id_="tables-table",
    )


def compactions_rows(comps: list[CompactionRow], base: str) -> list[list[str]]:
    """SHOW COMPACTIONS cells: id, table, partition, type, state, worker, start, duration,
    highest write id, error."""
    rows = []
    for c in comps:
        dur = fmt_duration(c.duration_s) + (" (running)" if c.running else "")
        rows.append(
            [
                e(c.id),
                f'<a href="{e(table_url(base, c.table))}">{e(c.table)}</a>',
                e(c.partition or "---"),
                e(c.type.upper()),
                state_badge(c.state),
                e(c.worker_id or "---"),
                e(fmt_time(c.started_at)),
                e(dur),
                e(c.highest_write_id),
                e((c.error or "")[:120]),
            ]
        )
    return rows


COMPACTION_HEADERS = [
    "CompactionId",
    "Table",
    "Partition",
    "Type",
    "State",
    "Worker",
    "Start",
    "Duration",
    "HighestWriteId",
    "Error",
]


def compactions_section(
    comps: list[CompactionRow], base: str, title: str = "SHOW COMPACTIONS"
) -> str:
    """The compaction queue and history, newest first."""
    ordered = sorted(comps, key=lambda c: c.id, reverse=True)
    return f'<h2 id="compactions">{e(title)}</h2>' + _table(
        COMPACTION_HEADERS,
        compactions_rows(ordered, base),
        numeric={0, 8},
        empty="no compactions",
        id_="compactions-table",
    )


def transactions_section(txns: list[TxnRow], window_note: str = "") -> str:
    """Open and recently aborted transactions."""
    rows = [
        [
            e(t.txn_id),
            state_badge(t.state),
            e(fmt_time(t.started_at)),
            e(fmt_time(t.last_heartbeat)),
            e(fmt_time(t.ended_at)),
            e(t.abort_reason or ""),
            e(t.user or ""),
            e(t.agent_info or ""),
            e(", ".join(f"{k}:{v}" for k, v in sorted(t.write_ids.items()))),
        ]
        for t in txns
    ]
    return (
        f'<h2 id="transactions">Transactions <span class="muted">open and recently aborted'
        f"{e(window_note)}</span></h2>"
        + _table(
            [
                "txn id",
                "state",
                "started",
                "last heartbeat",
                "ended",
                "abort reason",
                "user",
                "agent",
                "write ids",
            ],
            rows,
            numeric={0},
            empty="no open or recently aborted transactions",
            id_="transactions-table",
        )
    )


def locks_section(locks: list[LockRow]) -> str:
    """SHOW LOCKS."""
    rows = [
        [
            e(lk.lock_id),
            e(lk.table),
            e(lk.partition or ""),
            state_badge(lk.state),
            e(lk.lock_type),
            e(lk.txn_id),
            e(fmt_time(lk.acquired_at)),
            e(lk.user or ""),
        ]
        for lk in locks
    ]
    return '<h2 id="locks">SHOW LOCKS</h2>' + _table(
        ["lock id", "table", "partition", "state", "type", "txn id", "acquired at", "user"],
        rows,
        numeric={0, 5},
        empty="no locks",
        id_="locks-table",
    )


def overview_page(ov: Overview, base: str, user: str | None = None, window_note: str = "") -> str:
    """The main page: tables, SHOW COMPACTIONS, transactions, locks."""
    body = (
        f'<p class="muted">read at {e(fmt_time(ov.read_at))} UTC; current snapshot '
        f"(ValidWriteIdList) of every table</p>"
        + tables_section(ov.tables, base)
        + compactions_section(ov.compactions, base)
        + transactions_section(ov.transactions, window_note)
        + locks_section(ov.locks)
    )
    return page("ACID tables", body, base, user)


# -------------------------------------------------------------------------------- chart


def nice_step(raw: float) -> int:
    """The smallest 1, 2 or 5 times a power of ten that is >= ``raw`` (at least 1): the
    chart's y-axis step."""
    step = 1
    while True:
        for m in (1, 2, 5):
            if step * m >= raw:
                return step * m
        step *= 10


def rows_chart(commits: list[CommitRow], width: int = 720, height: int = 220) -> str:
    """Inline SVG: rows inserted / updated / deleted per commit (stacked bars, one per write
    id, last 60 commits), with a y axis. Commits without statistics draw as empty slots."""
    shown = commits[-60:]
    colors = (
        ("rows_inserted", "#16a34a", "inserted"),
        ("rows_updated", "#2563eb", "updated"),
        ("rows_deleted", "#dc2626", "deleted"),
    )
    left, right, top, bottom = 56, 12, 24, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    totals = [sum((getattr(c, k) or 0) for k, _, _ in colors) for c in shown]
    step = nice_step(max(totals, default=0) / 4)
    peak = step * 4
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="rows-chart" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="rows per commit" style="background:#fff;border:1px solid #d9e2ec">'
    ]
    # legend
    x = left
    for _, color, label in colors:
        out.append(
            f'<rect x="{x}" y="6" width="10" height="10" fill="{color}"/>'
            f'<text x="{x + 14}" y="15" font-size="11">{label}</text>'
        )
        x += 80
    out.append(
        f'<text x="{width - right}" y="15" font-size="11" text-anchor="end" '
        f'fill="#7b8794">rows per commit (write id)</text>'
    )
    # axis + grid
    for i in range(5):
        v = step * i
        y = top + plot_h - plot_h * i / 4
        out.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="#eef2f7"/><text x="{left - 4}" y="{y + 4:.1f}" font-size="10" '
            f'text-anchor="end">{v:,}</text>'
        )
    out.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}" stroke="#9aa5b1"/>')
    if not shown:
        out.append(
            f'<text x="{left + plot_w / 2}" y="{top + plot_h / 2}" font-size="12" '
            f'text-anchor="middle" fill="#7b8794">no commits</text>'
        )
    slot = plot_w / max(len(shown), 1)
    bar = max(2.0, min(40.0, slot * 0.7))
    label_every = max(1, len(shown) // 20)
    for i, c in enumerate(shown):
        cx = left + slot * i + slot / 2
        y = top + plot_h
        for key, color, label in colors:
            v = getattr(c, key) or 0
            if v <= 0:
                continue
            h = plot_h * v / peak
            y -= h
            out.append(
                f'<rect x="{cx - bar / 2:.1f}" y="{y:.1f}" width="{bar:.1f}" '
                f'height="{h:.1f}" fill="{color}"><title>write id {c.write_id}: '
                f"{v:,} {label}</title></rect>"
            )
        if i % label_every == 0:
            out.append(
                f'<text x="{cx:.1f}" y="{top + plot_h + 14}" font-size="10" '
                f'text-anchor="middle">{c.write_id}</text>'
            )
    out.append(
        f'<text x="{left + plot_w / 2}" y="{height - 4}" font-size="10" '
        f'text-anchor="middle" fill="#7b8794">write id</text></svg>'
    )
    return "".join(out)


# -------------------------------------------------------------------------------- table page


def table_page(d: TableDetail, base: str, user: str | None = None) -> str:
    """A table's page: summary, AcidState per partition, chart, commit history, write ids,
    compactions."""
    s = d.summary
    info = _table(
        ["property", "value"],
        [
            ["location", f"<code>{e(s.location)}</code>"],
            ["columns", e(", ".join(f"{n} {t}" for n, t in d.columns))],
            ["partitioned by", e(", ".join(f"{n} {t}" for n, t in d.partition_columns) or NBSP)],
            ["primary key", e(", ".join(d.primary_key) or NBSP)],
            ["buckets", e(d.num_buckets or "unbucketed")],
            ["high watermark", e(s.high_watermark)],
            ["ValidWriteIdList", f"<code>{e(s.valid_write_ids)}</code>"],
            [
                "open transactions",
                e(
                    f"{s.open_txns} (txn ids {', '.join(map(str, s.open_txn_ids)) or NBSP}; "
                    f"write ids {', '.join(map(str, s.open_write_ids)) or NBSP})"
                ),
            ],
            ["aborted write ids", e(", ".join(map(str, s.aborted_write_ids)) or NBSP)],
            ["deltas / delete deltas", e(f"{s.deltas} / {s.delete_deltas}")],
            [
                "base size / delta size",
                e(f"{fmt_bytes(s.base_bytes)} / {fmt_bytes(s.delta_bytes)}"),
            ],
        ]
        + [[e(k), e(v)] for k, v in sorted(d.properties.items())],
        id_="table-info",
    )
    err = f'<p class="err">{e(s.error)}</p>' if s.error else ""
    parts = _table(
        [
            "partition",
            "base",
            "base size",
            "deltas",
            "delete deltas",
            "delta size",
            "obsolete (ready for cleaning)",
            "aborted",
        ],
        [
            [
                e(p.partition or "(unpartitioned)"),
                e(p.base),
                e(fmt_bytes(p.base_bytes)),
                "<br>".join(e(x) for x in p.deltas) or NBSP,
                "<br>".join(e(x) for x in p.delete_deltas) or NBSP,
                e(fmt_bytes(p.delta_bytes)),
                "<br>".join(e(x) for x in p.obsolete) or NBSP,
                "<br>".join(e(x) for x in p.aborted) or NBSP,
            ]
            for p in d.partitions
        ],
        numeric={2, 5},
        empty="no data directories",
        id_="partitions-table",
    )

    def n(v):
        return NBSP if v is None else f"{v:,}"

    commits = _table(
        [
            "write id",
            "txn id",
            "commit id",
            "commit time",
            "operations",
            "rows inserted",
            "rows updated",
            "rows deleted",
            "files",
            "bytes",
            "batch id",
        ],
        [
            [
                e(c.write_id),
                e(c.txn_id),
                e(c.commit_id),
                e(fmt_time(c.committed_at)),
                e(", ".join(c.operations)),
                e(n(c.rows_inserted)),
                e(n(c.rows_updated)),
                e(n(c.rows_deleted)),
                e(n(c.files)),
                e(fmt_bytes(c.bytes)),
                f'<code title="{e(c.batch_id)}">{e(c.batch_id[:32])}</code>'
                if c.batch_id
                else NBSP,
            ]
            for c in reversed(d.commits)
        ],
        numeric={0, 1, 2, 5, 6, 7, 8, 9},
        empty="no commits",
        id_="commits-table",
    )
    wids = _table(
        ["write id", "txn id", "state"],
        [[e(w), e(t), state_badge(st)] for w, t, st in reversed(d.write_ids)],
        numeric={0, 1},
        empty="no write ids",
        id_="write-ids-table",
    )
    body = (
        f"<h2>{e(s.name)}</h2>{err}{info}"
        f"<h2>AcidState (current snapshot)</h2>{parts}"
        f"<h2>Rows per commit</h2>{rows_chart(d.commits)}"
        f"<h2>Commit history</h2>{commits}"
        + compactions_section(d.compactions, base, "SHOW COMPACTIONS (this table)")
        + f"<h2>Write ids</h2>{wids}"
    )
    return page(f"{s.name} - ACID tables", body, base, user)


def message_page(title: str, message: str, base: str, user: str | None = None) -> str:
    """A page with one message (errors, empty catalog)."""
    return page(title, f"<h2>{e(title)}</h2><p>{e(message)}</p>", base, user)
