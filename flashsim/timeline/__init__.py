"""A scenario as a timeline: phases that overlap or repeat and events, on one SimPy clock.

* :mod:`flashsim.timeline.timing`: the timing keys of a phase (``start``,
  ``after``, ``repeat``, ``reset``), taken off the phase before its kind
  validates it, and the checks of their order;
* :mod:`flashsim.timeline.events`: the ``[[events]]`` schema;
* :mod:`flashsim.timeline.actions`: what each event does, through the
  :class:`~flashsim.components.target_state.StatefulTarget` interface and the
  :class:`~flashsim.systems.base.BuiltSystem` hooks only;
* :mod:`flashsim.timeline.scheduler`: phases as greenlets sharing the clock;
* :mod:`flashsim.timeline.runner`: when each phase run starts and each event fires.

``docs/reference.md`` ("Timeline") describes the keys for users.
"""
