"""Small trace sets shared by several test modules."""

# Two sessions out of order, metadata of several types, one event time: what list filters sort
# and filter on.
TWO_SESSIONS = [
    {"text": "s2 first", "session": "s2", "session_time": "2 May 2023 10:00"},
    {"text": "s1 first", "session": "s1", "session_time": "14 March 2023 19:00",
     "metadata": {"topic": "bread", "n": 1}},
    {"text": "s1 second", "session": "s1", "session_time": "14 March 2023 19:00",
     "metadata": {"topic": "city", "n": 2, "flag": True}},
    {"text": "s2 second", "session": "s2", "session_time": "2 May 2023 10:00",
     "event_time": "2023-05-03T08:00:00", "metadata": {"topic": "city"}},
]
