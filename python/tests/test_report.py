"""python -m autoshard.report: the measured timeline of shard-run traces and
the structure summary the lit and browser tests read."""

import json
import os
import subprocess
import sys

import pytest

from autoshard.report import TraceError, summarize, trace_report
from autoshard.report.__main__ import main

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)


def _trace(path, origin, events, meta=None):
    """A trace as shard-run writes it: thread names, the step, then the
    entry's instructions (calls nest their callee's); ``meta`` its
    ``otherData`` (the run)."""
    ev = [{"args": {"name": "compute"}, "name": "thread_name", "ph": "M", "pid": 0, "tid": 0},
          {"args": {"name": "comm"}, "name": "thread_name", "ph": "M", "pid": 0, "tid": 1}]
    end = max(ts + dur for _, _, ts, dur, _ in events)
    ev.append({"name": "train_step 1", "cat": "step", "ph": "X", "pid": 0, "tid": 0,
               "ts": origin, "dur": end})
    for name, cat, ts, dur, tid in events:
        ev.append({"name": name, "cat": cat, "ph": "X", "pid": 0, "tid": tid,
                   "ts": origin + ts, "dur": dur})
    doc = {"traceEvents": ev}
    if meta is not None:
        doc["otherData"] = meta
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.fixture
def two_ranks(tmp_path):
    # Rank 0: F, send, (gap), B; its forward call nests two instructions.
    r0 = _trace(tmp_path / "trace.json", 1000.0, [
        ("gpt2_block_fwd", "train_step__pp0", 0, 400, 0),
        ("matmul", "gpt2_block_fwd", 10, 100, 0),
        ("attention", "gpt2_block_fwd", 150, 100, 0),
        ("dist.send_start", "train_step__pp0", 400, 50, 0),
        ("gpt2_block_bwd", "train_step__pp0", 900, 700, 0),
        ("adamw", "train_step__pp0", 1600, 100, 0),
        ("dist.send", "comm", 410, 30, 1),
    ])
    # Rank 1, another clock origin: recv, F, B, send.
    r1 = _trace(tmp_path / "trace.rank1.json", 77000.0, [
        ("dist.recv", "train_step__pp1", 0, 450, 0),
        ("gpt2_block_fwd", "train_step__pp1", 450, 400, 0),
        ("gpt2_block_bwd", "train_step__pp1", 850, 800, 0),
        ("dist.send_start", "train_step__pp1", 1650, 50, 0),
    ])
    return r0, r1


def test_measured_timeline_lanes_units_and_idle(two_ranks):
    page = trace_report(list(reversed(two_ranks)))  # the rank comes from the name
    lines = summarize(page)
    assert lines[0] == "sections measured"
    assert "timeline timeline-measured kind=measured lanes=3 units=9 " in lines[2] + " "
    # Rank 0's compute thread: the calls are one box each (nested
    # instructions are not drawn), the gap between send and backward idle.
    assert lines[3] == "  lane 0: 4 units (B=1 F=1 comm=1 other=1)"
    assert lines[4] == "  lane 1: 1 units (comm=1)"
    assert lines[5] == "  lane 2: 4 units (B=1 F=1 comm=2)"
    assert 'idle 0.450 to 0.900 ms' in page
    assert "rank 0 compute" in page and "rank 1 compute" in page and "rank 0 comm" in page
    # Self-contained: the shared style and script inline, nothing fetched.
    assert "<style>" in page and "<script>" in page
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    # Each rank from its own step's start: rank 1's clock origin is gone.
    assert "longest step 1.70 ms" in page


def test_cli_writes_page_and_summary(two_ranks, tmp_path, capsys):
    out = tmp_path / "timeline.html"
    assert main([*two_ranks, "-o", str(out), "--title", "pp=2 step"]) == 0
    assert "<title>pp=2 step</title>" in out.read_text()
    assert main(["--summary", str(out)]) == 0
    assert "timeline timeline-measured kind=measured lanes=3" in capsys.readouterr().out
    # As a module, from a source checkout.
    p = subprocess.run([sys.executable, "-m", "autoshard.report", "--summary", str(out)],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=PYTHON_DIR),
                       timeout=60)
    assert p.returncode == 0 and "lanes=3" in p.stdout


@pytest.mark.parametrize("content, message", [
    ("{not json", "not JSON"),
    ('{"traceEvents": 3}', "no 'traceEvents' list (found int)"),
    ('{"traceEvents": [{"ph": "X", "name": "matmul", "ts": 1}]}', "event 0 ('matmul') has no numeric 'dur'"),
    ('{"traceEvents": [{"ph": "M", "name": "thread_name", "tid": 0}]}', "no complete ('X') events"),
    ('{"traceEvents": [7]}', "event 0 is not an object: 7"),
])
def test_bad_trace_is_an_error_naming_the_file(tmp_path, content, message):
    path = tmp_path / "t.json"
    path.write_text(content)
    with pytest.raises(TraceError) as e:
        trace_report([str(path)])
    assert str(path) in str(e.value) and message in str(e.value)


def test_cli_reports_errors(tmp_path, capsys, two_ranks):
    assert main([str(tmp_path / "missing.json")]) == 1
    err = capsys.readouterr().err
    assert "autoshard.report: error:" in err and "missing.json: cannot read" in err
    assert main([two_ranks[0], two_ranks[0]]) == 1
    assert "two traces of the same rank: ranks [0, 0]" in capsys.readouterr().err


def test_predicted_timelines_come_first(two_ranks, tmp_path):
    predicted = ('<html><body><figure style="width:10px"><figcaption>unit</figcaption>'
                 '<svg class="timeline" id="timeline-unit" data-kind="unit">'
                 '<g class="lane" data-lane="0"><rect class="unit F" data-mb="0"></rect></g>'
                 '<g class="lane" data-lane="1"><rect class="unit B" data-mb="0"></rect></g>'
                 '</svg></figure><figure><svg class="bars" id="memory"></svg></figure></body></html>')
    page = trace_report(list(two_ranks), predicted=predicted)
    lines = summarize(page)
    assert lines[0] == "sections predicted measured"
    timelines = [l.split()[1] for l in lines if l.startswith("timeline ")]
    assert timelines == ["timeline-unit", "timeline-measured"]  # the bars are not copied
    with pytest.raises(TraceError, match="the predicted page has no pipeline timeline"):
        trace_report(list(two_ranks), predicted="<html><body><h1>x</h1></body></html>")
    # The CLI reads the page.
    plan = tmp_path / "plan.html"
    plan.write_text(predicted)
    out = tmp_path / "both.html"
    assert main([*two_ranks, "--predicted", str(plan), "-o", str(out)]) == 0
    assert 'id="timeline-unit"' in out.read_text()


def _run(rank, world=2, plan=None, artifact="/runs/a/model.json", step=1):
    return {"rank": rank, "world_size": world, "artifact": artifact,
            "plan": plan if plan is not None else {"pp": 2}, "step": step}


def test_traces_of_different_runs_are_refused(tmp_path):
    events = [("gpt2_block_fwd", "x", 0, 10, 0)]
    r0 = _trace(tmp_path / "trace.json", 0.0, events, _run(0))
    r1 = _trace(tmp_path / "trace.rank1.json", 0.0, events, _run(1))
    assert "lanes=" in "\n".join(summarize(trace_report([r0, r1])))
    other = tmp_path / "other"
    other.mkdir()
    for meta, message in [
            (_run(1, plan={"dp": 2}), 'plan {"dp": 2} vs {"pp": 2}'),
            (_run(1, artifact="/runs/b/model.json"), "artifact"),
            (_run(1, step=3), "step 3 vs 1"),
            (_run(1, world=4), "world_size 4 vs 2"),
            (_run(0), "the file name says rank 1, the trace rank 0")]:
        bad = _trace(other / "trace.rank1.json", 0.0, events, meta)
        with pytest.raises(TraceError) as e:
            trace_report([r0, bad])
        assert message in str(e.value), str(e.value)
    three = _trace(other / "trace.rank2.json", 0.0, events, _run(2))
    with pytest.raises(TraceError, match="rank 2 of a run of 2 ranks"):
        trace_report([r0, three])
    # A --predicted page of a plan on another number of ranks.
    page = ('<html><body><div class="rank" data-rank="0"></div><div class="rank" data-rank="1">'
            '</div><div class="rank" data-rank="2"></div><figure><svg class="timeline" '
            'id="timeline-unit" data-kind="unit"><g class="lane"><rect class="unit F"></rect>'
            '</g></svg></figure></body></html>')
    with pytest.raises(TraceError, match="plan on 3 ranks, the traces of a run on 2"):
        trace_report([r0, r1], predicted=page)


def test_cli_bad_files_are_errors_not_tracebacks(two_ranks, tmp_path, capsys):
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert main([str(binary), "-o", str(tmp_path / "x.html")]) == 1
    assert f"trace {binary}: not UTF-8 text" in capsys.readouterr().err
    assert main([*two_ranks, "--predicted", str(binary)]) == 1
    assert f"--predicted page {binary}: not UTF-8" in capsys.readouterr().err
    assert main([*two_ranks, "--predicted", str(tmp_path / "nope.html")]) == 1
    assert "--predicted page" in capsys.readouterr().err
    assert main([*two_ranks, "-o", str(tmp_path / "no" / "dir" / "x.html")]) == 1
    assert "cannot write -o" in capsys.readouterr().err
    assert main([*two_ranks, "-o", str(tmp_path)]) == 1
    assert "cannot write -o" in capsys.readouterr().err
    # --summary of something that is not a report page.
    assert main(["--summary", two_ranks[0]]) == 1
    assert "not an autoshard report page" in capsys.readouterr().err


def _clocked_ranks(tmp_path, host1="node-a"):
    """Rank 0 (trace zero 5000 us on the machine's clock) and rank 1 (zero
    -70500 us, its step 0.5 ms after rank 0's), as shard-run writes them."""
    def meta(rank, host, origin):
        return {"rank": rank, "world_size": 2, "artifact": "a.json", "plan": {"pp": 2},
                "step": 1, "clock": {"source": "steady_clock", "host": host,
                                     "origin_us": origin}}
    r0 = _trace(tmp_path / "trace.json", 1000.0, [
        ("gpt2_block_fwd", "train_step__pp0", 0, 400, 0),
        ("gpt2_block_bwd", "train_step__pp0", 900, 800, 0),
    ], meta(0, "node-a", 5000.0))
    r1 = _trace(tmp_path / "trace.rank1.json", 77000.0, [
        ("dist.recv", "train_step__pp1", 0, 450, 0),
        ("gpt2_block_fwd", "train_step__pp1", 450, 400, 0),
        ("gpt2_block_bwd", "train_step__pp1", 850, 850, 0),
    ], meta(1, host1, -70500.0))
    return r0, r1


def test_ranks_of_one_machine_share_its_clock(tmp_path):
    page = trace_report(list(_clocked_ranks(tmp_path)))
    # Rank 1's step starts 0.5 ms after rank 0's and ends at 0.5 + 1.7 ms.
    assert "2.20 ms from the first rank's step start" in page
    assert "drawn on its monotonic clock" in page
    # Rank 1's receive is drawn from 0.5 ms: idle before it on its lane.
    assert "idle 0.000 to 0.500 ms" in page


def test_ranks_of_different_machines_keep_their_own_zero(tmp_path):
    page = trace_report(list(_clocked_ranks(tmp_path, host1="node-b")))
    assert "longest step 1.70 ms" in page
    assert "clocks are not synchronized" in page


def test_steps_that_do_not_overlap_are_different_runs(tmp_path):
    # Rank 1's trace from a later run of the same artifact on the same
    # machine: its step starts at 33.5 ms, 31.8 ms after rank 0's ended.
    r0, r1 = _clocked_ranks(tmp_path)
    doc = json.loads(open(r1).read())
    doc["otherData"]["clock"]["origin_us"] += 33000.0
    open(r1, "w").write(json.dumps(doc))
    with pytest.raises(TraceError, match=r"trace.rank1.json and .*trace.json are traces of "
                       r"different runs: on the machine's clock the step of "
                       r"trace.rank1.json starts 31.800 ms after the step of "
                       r"trace.json ended"):
        trace_report([r0, r1])


def test_rank_from_the_trace_when_the_name_has_none(tmp_path):
    # A renamed copy of rank 1's trace: the trace says which rank it is.
    r0, r1 = _clocked_ranks(tmp_path)
    copy = tmp_path / "second.json"
    copy.write_text(open(r1).read())
    page = trace_report([r0, str(copy)])
    assert "rank 1 compute" in page and "2 ranks" in page


def test_page_names_missing_ranks_and_the_trace_without_a_clock(tmp_path, two_ranks):
    (tmp_path / "clocked").mkdir()
    r0, _ = _clocked_ranks(tmp_path / "clocked")
    assert "1 of 2 ranks" in trace_report([r0])
    page = trace_report(list(two_ranks))
    assert ("trace.json does not say which clock its times count on (no "
            "otherData.clock: written by an older shard-run)") in page


def test_a_clock_without_a_host_is_named(tmp_path):
    r0, r1 = _clocked_ranks(tmp_path)
    doc = json.loads(open(r1).read())
    doc["otherData"]["clock"]["host"] = ""
    open(r1, "w").write(json.dumps(doc))
    page = trace_report([r0, r1])
    assert "trace.rank1.json&#x27;s otherData.clock names no host" in page, page[:2000]
