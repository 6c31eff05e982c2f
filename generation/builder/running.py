"""Whether a treatment still runs at the session's reference moment (discharge, or the
in-stay cutoff). A running treatment is asked as one ("is the X working?", the rubric: X "is
being given" and, for an antibiotic, "continue X"). A course that ended before the session
(phenylephrine stopped 5 days before, cefepime stepped down to oral cefpodoxime the day
before) makes both false, and a physician would not sign them; it is asked as the finished
course it is (:attr:`.kinds.Topic.done`: "did the WBC respond to the cefepime course?", the
answer "given from A to B", no "being given", no "continue"). A physician reviewing a stay
asks that question too, and most courses end before discharge, so dropping them would leave
most charts without a treatment-response session. A step-down to another drug of the class
continues the treatment under that drug's name: the old drug's course has ended.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from physassist.timeline import Timeline

from .kinds import Topic
from .profile import Profile
from .signals import active, response_topics
from .vocab import ACTING_WITHIN_HOURS, RUNNING_WITHIN_HOURS


def running(tl: Timeline, word: str) -> bool:
    """A dose given within :data:`~.vocab.ACTING_WITHIN_HOURS` of the reference moment (still
    acting), or a current order of the drug (:func:`.signals.active`: ICU doses without an
    order count by their time) with a dose within :data:`~.vocab.RUNNING_WITHIN_HOURS` (an
    order left open with no dose for days is not a running course)."""
    given = tl.administrations(word).given
    if not given:
        return False
    since = tl.ref - given[-1]
    if since <= dt.timedelta(hours=ACTING_WITHIN_HOURS):
        return True
    return since <= dt.timedelta(hours=RUNNING_WITHIN_HOURS) and active(tl, word)


def running_responses(prof: Profile) -> list[Topic]:
    """The chart's measured treatment responses (:func:`.signals.response_topics`), each
    marked ``done`` when its treatment no longer runs at the session (:func:`running`)."""
    tl = prof.timeline
    if tl is None:
        return []
    return [
        t if running(tl, t.drug or "") else replace(t, done=True) for t in response_topics(prof)
    ]
