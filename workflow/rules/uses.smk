# One study running the systems of another (issue 29: studies do not reach into each other).
#
# The user declares it in its declaration (repro.study.Study.uses = ("<provider>",)). The provider
# offers what a user needs, once, in its own rules: provide_systems(<its declaration>, **facts) -- named
# values or functions (the inputs its systems need built on this host, a wrapper around the launcher,
# its stand-ins, its published values, its run section, ...; the provider documents its facts). The
# user reads them through used_systems(<its declaration>), never through the provider's globals.
#
# Every fact is looked up when it is needed: a job's inputs and params when the plan is made (after
# the Snakefile has read every study), the stand-ins of the user's report entry as soon as both
# studies are registered. So the Snakefile's include order does not matter, and a user whose provider
# never provides fails when its jobs are planned, naming both.

SYSTEMS_PROVIDED = {}  # provider study -> {fact: value or function}
_STAND_INS_WAITING = {}  # provider study -> [(the user's list to fill, select)]


def provide_systems(study, **facts):
    """Offer the systems of `study` (its declaration) to the studies that declare they use them."""
    if study.name in SYSTEMS_PROVIDED:
        raise WorkflowError(f"provide_systems({study.name!r}) called twice")
    SYSTEMS_PROVIDED[study.name] = facts
    for target, select in _STAND_INS_WAITING.pop(study.name, []):
        target.extend(s for s in facts.get("stand_ins", []) if select(s))


class UsedSystems:
    """What one study uses of another's systems (used_systems): each fact looked up when it is read."""

    def __init__(self, user, provider):
        self.user, self.name = user, provider

    def _facts(self):
        if self.name not in SYSTEMS_PROVIDED:
            raise WorkflowError(
                f"study {self.user} uses the systems of {self.name} (its declaration's uses), but "
                f"{self.name} provides none (provide_systems in {STUDIES}/{self.name}/, or it is not included)"
            )
        return SYSTEMS_PROVIDED[self.name]

    def value(self, key):
        """A fact's value now (inside an input or params function, when the plan is made)."""
        facts = self._facts()
        if key not in facts:
            raise WorkflowError(f"study {self.user} reads {self.name}'s fact {key!r}; it provides {sorted(facts)}")
        return facts[key]

    def fact(self, key):
        """A fact as an input or params function of the wildcards (a function fact gets them)."""

        def get(wildcards):
            v = self.value(key)
            return v(wildcards) if callable(v) else v

        return get

    def call(self, key, *args):
        """A function fact called with `args` (inside an input or params function)."""
        return self.value(key)(*args)

    def stand_ins(self, select=lambda s: True):
        """The provider's stand-ins that `select` keeps, for the user's report entry (register_study):
        a list, filled when the provider provides (now, or when the Snakefile reads it later)."""
        out = []
        if self.name in SYSTEMS_PROVIDED:
            out.extend(s for s in SYSTEMS_PROVIDED[self.name].get("stand_ins", []) if select(s))
        else:
            _STAND_INS_WAITING.setdefault(self.name, []).append((out, select))
        return out


def used_systems(user, provider=None):
    """The systems that `user` (a declaration, repro.study.Study) runs of `provider`, one of its
    declared `uses` (default: its only one)."""
    if provider is None:
        if len(user.uses) != 1:
            raise WorkflowError(f"used_systems({user.name!r}): name one of its uses {list(user.uses)}")
        (provider,) = user.uses
    elif provider not in user.uses:
        raise WorkflowError(f"study {user.name} does not declare that it uses {provider}'s systems (Study.uses)")
    if provider not in STUDY_NAMES:
        raise WorkflowError(f"study {user.name} uses the systems of {provider}: no folder {STUDIES}/{provider}/")
    return UsedSystems(user.name, provider)
