"""What a series is called: vendor naming (Siemens, GE, Philips, Canon/Toshiba) and BIDS
suffixes to one set of sequence names, from one table (`TABLE`, `BIDS_SUFFIXES`).

A SeriesDescription is split into words (`words`) on `_`, `-`, spaces, dots, slashes, brackets
and `+`, and where lower case turns to upper (camelCase: `dADC` is d ADC, `relCBF` rel CBF),
then lower-cased; `*` stays in a word (`T2*`). The rules of `TABLE` are tried in order, the
first that holds names the series: each needs a word matching `word` (a regular expression
matched against the whole word), with `also` one matching `also` as well, and no word matching
`unless`. The order carries the meaning: derived maps before their acquisition (ADC before
DWI, CBF before ASL), SWI before T2, post-contrast T1 before T1, T1 FLAIR (a T1-weighted
inversion recovery, GE's name) before FLAIR, FLAIR before T2.

A rule naming None leaves the series out: localizers, scouts, surveys, coil calibrations and
field maps are not images a rater reads. A description that no rule names is not relabelled:
the series is imported under its own description (`own_name`: made printable, on one line,
cut to fit the 32 characters of a sequence name) and the import summary lists it for the
admin to confirm. The user's `--sequence-map` rules (regular expressions) come first.

Names: T1, T1C (post-contrast T1), T2, FLAIR, T2*, SWI, PD, STIR, DWI, ADC, eADC, DTI (the
acquisition), FA, MD (DTI maps), DSC, DCE, ASL, CBF, CBV, MTT, TTP, Tmax, Perfusion, MRA,
MRV, QSM, "T1 map", "T2 map", "T2* map". A BIDS file's label (`label_bids`) is its name
followed by the file name's other entities: "T1 (acq-mprage)".
"""

import re
from dataclasses import dataclass

from errors import escape_unprintable, one_line

#: A sequence name is at most this long (`Series.sequence`); an own name leaves room for
#: " (12)" when a case has several series of that name.
MAX_NAME = 32
MAX_OWN_NAME = MAX_NAME - 5
_SPLIT = re.compile(r"[\s_\-./\\()\[\]{}<>,:;+=#&|'\"!?~^%@]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def words(description: str) -> list[str]:
    """The lower-case words of a description (`"ep2d_diff_3scan_trace_ADC"` ->
    ep2d, diff, 3scan, trace, adc; `"sT1W_3D_TFE"` -> s, t1w, 3d, tfe)."""
    return [w for w in _SPLIT.split(_CAMEL.sub(" ", description).lower()) if w]


@dataclass(frozen=True)
class Rule:
    """`name` when a word matches `word`, another (or the same) matches `also`, none `unless`."""

    name: str | None
    word: str
    also: str | None = None
    unless: str | None = None
    note: str = ""  # why a series named None is left out

    def holds(self, ws: list[str]) -> bool:
        def any_(pattern: str | None) -> bool:
            return pattern is not None and any(re.fullmatch(pattern, w) for w in ws)

        return any_(self.word) and (self.also is None or any_(self.also)) and not any_(self.unless)


_T1 = (r"t1|t1w|t1wi|t1se|t1tse|t1fse|t1ffe|t1tfe|t1flair|t1mpr|t1space|3dt1|mprage|mp2rage|"
       r"spgr|fspgr|bravo|tfe|vibe|inplanet1|uni|unit1")
_CONTRAST = r"c|ce|gd|gad|gado|gadolinium|post|postgd|postc|postcontrast|contrast|km|cm|mdc|enh"
_NOT_CONTRAST = r"pre|precontrast|pregd|native|nativ|non|no|wo|without|noncontrast"
_DIFFUSION = r"dwi|dw|diff|diffusion|trace|tracew|isodwi|resolve|b\d{3,4}|ep2d|epi"

TABLE: tuple[Rule, ...] = (
    # not for reading: localizers, scouts, surveys, coil calibrations, field maps
    Rule(None, r"loc|localizer|localiser|locator|scout|survey|pilot|aahead|aascout|tripilot",
         note="localizer"),
    Rule(None, r"pl|plane", also=r"3|three|tri", note="localizer"),  # GE's "3-pl T2* FGRE"
    Rule(None, r"calibration|cal|senseref|refscan|coilsurvey", note="calibration scan"),
    Rule(None, r"ref", also=r"sense|head|body|coil", note="calibration scan"),
    Rule(None, r"fieldmap|fieldmapping|b0map", note="field map"),
    Rule(None, r"field", also=r"map|mapping", note="field map"),
    # diffusion: its maps before the acquisition
    Rule("eADC", r"eadc|exponential|exp", also=_DIFFUSION + r"|adc|apparent|eadc|exponential"),
    Rule("eADC", r"e", also=r"adc"),  # "eADC", split at its case change
    Rule("ADC", r"adc|dadc|apparent"),
    Rule("FA", r"fa|colfa|fractional|fa\w*map"),
    Rule("MD", r"md|diffusivity"),
    Rule("DTI", r"dti|tensor|mddw|dtigrad\w*|\d+dir"),
    # perfusion: maps before acquisitions
    Rule("CBF", r"cbf|rcbf|relcbf"),
    Rule("CBF", r"flow", also=r"blood|cerebral"),
    Rule("CBV", r"cbv|rcbv|relcbv"),
    Rule("CBV", r"volume", also=r"blood"),
    Rule("MTT", r"mtt|transit"),
    Rule("TTP", r"ttp"),
    Rule("TTP", r"time", also=r"peak"),
    Rule("Tmax", r"tmax"),
    Rule("ASL", r"asl|pcasl|pasl|casl|astar|mastar|pulsar|fair|starasl"),
    Rule("DSC", r"dsc"),
    Rule("DSC", r"perf|perfusion", also=r"ep2d|epi|gre|dynamic|dyn"),
    Rule("DCE", r"dce"),
    Rule("DCE", r"dyn|dynamic|dynamics", also=_T1),
    Rule("Perfusion", r"perf|perfusion|pwi"),
    Rule("DWI", r"dwi|dw|diff|diffusion|trace|tracew|isodwi|resolve|b\d{3,4}"),
    # susceptibility before T2 and T2*
    Rule("QSM", r"qsm|chimap"),
    Rule("SWI", r"swi|swip|swan|swi3d\w*|susceptibility|suscept"),
    Rule("SWI", r"ven", also=r"bold"),
    # vessels
    Rule("MRV", r"mrv|venogram|venography|venous"),
    Rule("MRA", r"tof|angio|angiography|mra|inhance"),
    # quantitative maps before the weighted images
    Rule("T2* map", r"t2\*|t2star|t2s", also=r"map|mapping|relaxometry"),
    Rule("T2* map", r"t2starmap|r2starmap|r2\*"),
    Rule("T1 map", _T1, also=r"map|mapping|relaxometry|molli|vfa"),
    Rule("T1 map", r"t1map"),
    Rule("T2 map", r"t2", also=r"map|mapping|relaxometry"),
    Rule("T2 map", r"t2map"),
    # T1 after contrast, T1 FLAIR (T1-weighted), then FLAIR
    Rule("T1C", r"t1ce|t1c|t1gd|t1post|t1km|mpragegd|mpragepost", unless=_NOT_CONTRAST),
    Rule("T1C", _T1, also=_CONTRAST, unless=_NOT_CONTRAST),
    Rule("T1", _T1),
    Rule("FLAIR", r"flair|t2flair|darkfluid|dark\w*fluid|spcir|cubeflair"),
    Rule("FLAIR", r"dark", also=r"fluid"),
    Rule("STIR", r"stir|tirm"),
    # T2*: gradient echo, unless it is T1-weighted (T1 FFE, FLASH) or said to be T2
    Rule("T2*", r"t2\*|t2star|t2starw|t2s|hemo|medic|merge|megre|mgre|fe2d|t2ffe|t2gre"),
    Rule("T2*", r"gre|ffe|fl2d|fgre|gradient"),
    Rule("PD", r"pd|pdw|pdwi|pdtse|pdfse|proton"),
    Rule("T2", r"t2|t2w|t2wi|t2tse|t2fse|t2se|t2spc|t2space|t2blade|t2prop|inplanet2"),
)

#: BIDS suffix (the last `_` part of a file name) -> sequence name; None: not a series.
#: A `ce-` entity on a T1w makes it T1C; `part-phase` appends " phase".
BIDS_SUFFIXES: dict[str, str | None] = {
    "T1w": "T1", "inplaneT1": "T1", "UNIT1": "T1", "T2w": "T2", "inplaneT2": "T2",
    "FLAIR": "FLAIR", "T2starw": "T2*", "MEGRE": "T2*", "PDw": "PD", "swi": "SWI",
    "angio": "MRA", "dwi": "DWI", "asl": "ASL", "T1map": "T1 map", "T2map": "T2 map",
    "T2starmap": "T2* map", "Chimap": "QSM", "defacemask": None, "sbref": None,
    "m0scan": None, "epi": None, "phasediff": None, "magnitude1": None, "magnitude2": None,
    "phase1": None, "phase2": None, "fieldmap": None,
}


@dataclass(frozen=True)
class Naming:
    """What a series is called, and how: by the user's map, the table, or (`known` False) its
    own description, which the admin confirms. `name` None leaves the series out, for the
    reason `note` ("localizer", "calibration scan", "field map", "mapped to null by the
    sequence map")."""

    name: str | None
    known: bool
    note: str = ""


def own_name(text: str, fallback: str) -> str:
    """`text` as a sequence name: printable, on one line, at most MAX_OWN_NAME characters;
    `fallback` when nothing is left."""
    return one_line(escape_unprintable(text), MAX_OWN_NAME) or fallback


def from_table(description: str) -> Naming | None:
    """The first rule of TABLE that holds for `description`, or None."""
    ws = words(description)
    for rule in TABLE:
        if rule.holds(ws):
            return Naming(rule.name, True, rule.note)
    return None


def name_series(description: str, user_rules: list[tuple[re.Pattern, str | None]] = (),
                fallback: str = "series") -> Naming:
    """The user's rules (searched in order), then TABLE, then the description itself."""
    for pattern, name in user_rules:
        if pattern.search(description):
            return Naming(name, True, "" if name else "mapped to null by the sequence map")
    return from_table(description) or Naming(own_name(description, fallback), False)


def with_b_values(name: str, b_values: list[float]) -> str:
    """The name of a series of several diffusion-weighted volumes with its b-values (s/mm2,
    to the nearest 10, each once, in order): "DWI (b=0,1000)"; "DWI (4 b-values, 0-3000)"
    where the list would not fit MAX_OWN_NAME; `name` alone without b-values."""
    shells = sorted({int(round(b, -1)) for b in b_values if 0 <= b < 1e6})
    if not shells:
        return name
    for label in (f"{name} (b={','.join(map(str, shells))})",
                  f"{name} ({len(shells)} b-values, {shells[0]}-{shells[-1]})"):
        if len(label) <= MAX_OWN_NAME:
            return label
    return name


def name_bids(stem: str, suffix: str) -> Naming:
    """A BIDS file's name: `stem` is its name before `_<suffix>.nii[.gz]` (entities such as
    `sub-01_ses-pre_ce-gadolinium`). A suffix not in BIDS_SUFFIXES is named by the entities
    after sub- and ses- with the suffix (`acq-fast_MP2RAGE`)."""
    entities = dict(e.split("-", 1) for e in stem.split("_") if "-" in e)
    if suffix not in BIDS_SUFFIXES:  # named by the file, listed for the admin to confirm
        rest = [e for e in stem.split("_") if not e.startswith(("sub-", "ses-"))]
        return Naming(own_name("_".join([*rest, suffix]), suffix), False)
    name = BIDS_SUFFIXES[suffix]
    if name == "T1" and "ce" in entities:
        name = "T1C"
    if name is not None and entities.get("part") == "phase":
        name = f"{name} phase"
    return Naming(name, True, "not an image to read" if name is None else "")


def label_bids(stem: str, suffix: str) -> Naming:
    """`name_bids`, with the entities that tell series of one name apart kept after it, in the
    file name's order: every entity but `sub-` and `ses-` (the case's) and those the name says
    already (the `ce-` of a T1C, `part-phase`): `sub-01_acq-mprage_T1w` -> "T1 (acq-mprage)",
    `sub-01_acq-mprage_ce-gadolinium_run-2_T1w` -> "T1C (acq-mprage, run-2)". Cut, like an own
    name, to MAX_OWN_NAME characters."""
    naming = name_bids(stem, suffix)
    if naming.name is None or not naming.known:  # an own name has its entities already
        return naming
    said = {"sub", "ses"} | ({"ce"} if naming.name.startswith("T1C") else set())
    kept = [e for e in stem.split("_") if "-" in e and e.split("-", 1)[0] not in said
            and e != "part-phase"]
    if not kept:
        return naming
    return Naming(own_name(f"{naming.name} ({', '.join(kept)})", naming.name), True)
