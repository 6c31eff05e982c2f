"""The turn table from the samples the eval held in memory equals the one read back from the
log, and a log whose samples were not all seen (a resumed eval_set) is read back instead."""

from __future__ import annotations

from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log

from physassist.results import samples_in_memory, turn_table, with_samples
from tasks.physassistbench import physassistbench


def test_samples_kept_in_memory_give_the_logs_turn_table(tmp_path, capsys):
    task = physassistbench(dataset="sample", ehr_source="sample")
    with samples_in_memory() as kept:
        [log] = inspect_eval(
            task,
            model="physassist/explorer",
            log_dir=str(tmp_path),
            display="none",
            limit=3,
            max_samples=3,
        )
    assert "hooks enabled" not in capsys.readouterr().out  # Inspect's banner would name the hook
    from_memory, from_disk = with_samples(log, kept), read_eval_log(log.location)
    assert len(kept) == 3 and all(any(s is k for k in kept) for s in from_memory.samples)
    assert turn_table(from_memory).equals(turn_table(from_disk))
    assert [(s.id, s.epoch) for s in from_memory.samples] == [
        (s.id, s.epoch) for s in from_disk.samples
    ]

    reread = with_samples(log, kept[:2])  # one sample not seen: the log is read back
    assert not any(s is k for s in reread.samples for k in kept)
    assert turn_table(reread).equals(turn_table(from_disk))
