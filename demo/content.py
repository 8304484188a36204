"""Synthetic cases, tasks and answer variants of the demo bundle (text only, no patient data).

Every record, case title and answer is invented for the demo. Each task carries a bank of
answer variants: correct ones and ones written to show one error class of the Neural-MedBench
taxonomy (perceptual, reasoning, knowledge, grounding, hallucination). `demo.bundle`
turns the variants into model responses with seeded choices.
"""

from __future__ import annotations

from demo.content_types import DemoCase, DemoTask
from demo.multi_turn_tasks import MULTI_TURN
from demo.single_turn_tasks import SINGLE_TURN

SYNTHETIC_BANNER = "SYNTHETIC — not a real patient"
ERROR_TAGS = ("perceptual", "reasoning", "knowledge", "grounding", "hallucination")








def _record(*, age: int, sex: str, complaint: str, history: str, exam: str, labs: str,
            other: str = "") -> str:
    """A synthetic health record in plain text (shown as written), marked as synthetic at the
    top and bottom."""
    parts = [
        f"{SYNTHETIC_BANNER}. Invented for the Neural-MedBench Studio demo.",
        f"Age / sex: {age} / {sex}",
        f"Presenting complaint: {complaint}",
        f"History: {history}",
        f"Examination: {exam}",
        f"Laboratory: {labs}",
    ]
    if other:
        parts.append(other)
    parts.append(f"{SYNTHETIC_BANNER}; any resemblance to a real person is coincidental.")
    return "\n\n".join(parts)


def _title(text: str) -> str:
    return f"{SYNTHETIC_BANNER}: {text}"


def _truth(final: str, differential: list[str], lesion: str, reasoning: str) -> dict[str, object]:
    return {"final_diagnosis": final, "differential": differential, "lesion": lesion,
            "reasoning": reasoning}


CASES: tuple[DemoCase, ...] = (
    DemoCase(
        "syn-01", "stroke", _title("67-year-old woman who woke with right-sided weakness and no speech"),
        ("T1", "DWI", "ADC", "FLAIR"),
        _record(
            age=67, sex="female",
            complaint="Woke at 06:10 unable to speak, with a weak right arm and face. "
                      "Last known well at 21:00 the evening before (9 h).",
            history="Hypertension, paroxysmal atrial fibrillation (not anticoagulated, declined), "
                    "type 2 diabetes. No prior stroke, no recent surgery or bleeding.",
            exam="BP 168/92, irregular pulse. Global aphasia, right facial weakness, right arm "
                 "0/5, right leg 3/5, right hemisensory loss, left gaze preference. NIHSS 14.",
            labs="Glucose 7.8 mmol/L, platelets 245 ×10⁹/L, INR 1.0, creatinine 78 µmol/L.",
            other="Imaging: MRI brain 07:05 (T1, DWI b=1000, ADC, FLAIR).",
        ),
        {"NIHSS": 14, "mRS (pre-stroke)": 0},
        _truth(
            "Acute ischaemic stroke, left middle cerebral artery territory (unknown onset, "
            "DWI-FLAIR mismatch)",
            ["Left MCA embolic stroke from atrial fibrillation", "Todd's paresis after an "
             "unwitnessed seizure", "Hypoglycaemia (excluded by glucose)", "Migraine aura"],
            "Cortical-subcortical DWI hyperintensity with low ADC in the left insula, frontal "
            "operculum, pre/postcentral gyri and left corona radiata; no corresponding FLAIR "
            "hyperintensity.",
            "Restricted diffusion in a left MCA distribution explains aphasia and right "
            "hemiparesis; a DWI lesion without FLAIR change indicates onset within about 4.5 h "
            "(WAKE-UP trial), so IV thrombolysis is an option despite unknown onset; AF makes "
            "cardioembolism likely and vessel imaging for thrombectomy is indicated.",
        ),
        coarse=("DWI", "ADC"),
    ),
    DemoCase(
        "syn-02", "ms", _title("29-year-old woman with numbness of the right leg for ten days"),
        ("T1", "T2", "FLAIR"),
        _record(
            age=29, sex="female",
            complaint="Ten days of ascending numbness of the right leg and an electric sensation "
                      "down the spine on neck flexion.",
            history="No previous neurological episodes. Smoker, vitamin D deficiency. Mother "
                    "with hypothyroidism. No fever, no recent vaccination or infection.",
            exam="Reduced vibration and pinprick in the right leg to T10, brisk reflexes on the "
                 "right, extensor right plantar, mild gait ataxia. Visual acuity 6/6 both eyes.",
            labs="FBC, CRP, B12, ANA and syphilis serology normal or negative.",
            other="Imaging: MRI brain without contrast (T1, T2, FLAIR).",
        ),
        {"EDSS": 2.0, "SDMT": 52},
        _truth(
            "Relapsing-remitting multiple sclerosis (first attack; dissemination in space on "
            "MRI, dissemination in time by CSF-specific oligoclonal bands)",
            ["Neuromyelitis optica spectrum disorder", "MOG antibody-associated disease",
             "Acute disseminated encephalomyelitis", "Neurosarcoidosis"],
            "Ovoid T2/FLAIR-hyperintense periventricular lesions perpendicular to the lateral "
            "ventricles in both hemispheres, a left frontal juxtacortical lesion and a right "
            "middle cerebellar peduncle lesion; one left periventricular lesion is T1-hypointense.",
            "Periventricular, juxtacortical and infratentorial lesions meet dissemination in "
            "space (McDonald 2017); without contrast, dissemination in time is met by "
            "CSF-specific oligoclonal bands; negative AQP4/MOG antibodies argue against mimics.",
        ),
    ),
    DemoCase(
        "syn-03", "mts", _title("34-year-old man with drug-resistant focal seizures"),
        ("T1", "T2", "FLAIR"),
        _record(
            age=34, sex="male",
            complaint="Focal impaired-awareness seizures 4-6 times a month despite three "
                      "anti-seizure medications.",
            history="Prolonged febrile seizure at age 2. Seizures since age 16: rising "
                    "epigastric sensation and déjà vu, then staring, lip smacking, right-hand "
                    "fumbling and dystonic posturing of the left hand; postictal dysphasia absent.",
            exam="Normal neurological examination.",
            labs="Levetiracetam and lamotrigine levels therapeutic.",
            other="EEG: interictal sharp waves over the right anterior temporal region "
                  "(F8/T8). Imaging: epilepsy-protocol MRI (T1, T2, FLAIR).",
        ),
        {"MoCA": 26, "Verbal memory (z)": -0.4, "Visual memory (z)": -1.8},
        _truth(
            "Right mesial temporal lobe epilepsy due to right hippocampal sclerosis",
            ["Right temporal low-grade tumour (DNET, ganglioglioma)", "Focal cortical "
             "dysplasia", "Autoimmune limbic encephalitis"],
            "Small right hippocampus with increased T2/FLAIR signal; left hippocampus normal.",
            "Hippocampal atrophy with T2/FLAIR hyperintensity is the MRI signature of "
            "hippocampal sclerosis; left-hand dystonic posturing (contralateral), right-hand "
            "automatisms (ipsilateral), right temporal EEG and poor visual memory are all "
            "concordant with the right side, making him a candidate for surgical evaluation.",
        ),
    ),
    DemoCase(
        "syn-04", "hsv", _title("58-year-old woman with fever, confusion and a first seizure"),
        ("T1", "FLAIR", "DWI"),
        _record(
            age=58, sex="female",
            complaint="Three days of fever and headache, then confusion, odd smells and a "
                      "focal seizure with impaired awareness.",
            history="Previously well. No immunosuppression, no travel, no animal bites.",
            exam="Temperature 38.6 °C. GCS 13 (E4 V3 M6), disoriented, word-finding "
                 "difficulty; no neck stiffness, no focal weakness.",
            labs="WBC 11.2 ×10⁹/L, CRP 24 mg/L, sodium 131 mmol/L.",
            other="Imaging: MRI brain (T1, FLAIR, DWI).",
        ),
        {"GCS": 13},
        _truth(
            "Herpes simplex virus type 1 encephalitis",
            ["Autoimmune limbic encephalitis (LGI1, NMDAR)", "Other viral encephalitis (VZV)",
             "Status epilepticus-related signal change", "Infiltrative glioma"],
            "FLAIR and DWI hyperintensity with gyral swelling of the left mesial and anterior "
            "temporal lobe and left insula; basal ganglia spared.",
            "Fever, encephalopathy and seizures with asymmetric limbic/insular involvement are "
            "HSV encephalitis until proven otherwise: start IV aciclovir at once; lateralised "
            "periodic discharges, lymphocytic CSF with red cells and a positive HSV-1 PCR "
            "confirm it.",
        ),
    ),
    DemoCase(
        "syn-05", "gbm", _title("61-year-old man with four weeks of headache and personality change"),
        ("T1", "T1C", "FLAIR"),
        _record(
            age=61, sex="male",
            complaint="Four weeks of morning headache, apathy and disinhibition noticed by his "
                      "wife; one generalised seizure.",
            history="Ex-smoker. No cancer history. No fever, no weight loss.",
            exam="Mild left pronator drift, abulia, left grasp reflex. Fundi: early "
                 "papilloedema.",
            labs="Normal blood count, CRP 3 mg/L. Chest CT normal.",
            other="Imaging: MRI brain (T1, T1 post-gadolinium, FLAIR).",
        ),
        {"MoCA": 22, "KPS": 70},
        _truth(
            "Glioblastoma, IDH-wildtype (presumed; histology pending)",
            ["Solitary metastasis", "Pyogenic abscess", "Tumefactive demyelination",
             "Primary CNS lymphoma"],
            "Right frontal mass with a thick, irregular enhancing rim, central necrosis and "
            "surrounding FLAIR-hyperintense vasogenic oedema confined to the right hemisphere.",
            "A solitary necrotic mass with thick nodular rim enhancement and extensive oedema in "
            "a 61-year-old with a normal chest CT favours glioblastoma; abscess usually has a "
            "thin smooth rim, demyelination an incomplete ring, lymphoma solid enhancement.",
        ),
    ),
    DemoCase(
        "syn-06", "alzheimer", _title("72-year-old man with three years of forgetfulness"),
        ("T1", "FLAIR"),
        _record(
            age=72, sex="male",
            complaint="Progressive forgetfulness over three years: repeats questions, misplaces "
                      "things, got lost driving a familiar route.",
            history="Hypertension, treated. Retired accountant. Mother had late-onset dementia. "
                    "No mood disorder, no alcohol excess.",
            exam="Normal neurological examination apart from impaired delayed recall.",
            labs="B12, folate, TSH, calcium and syphilis serology normal.",
            other="Neuropsychology: delayed recall 0/5 (not helped by cues), clock drawing "
                  "mildly impaired, CDR 1.",
        ),
        {"MMSE": 21, "MoCA": 17, "CDR": 1},
        _truth(
            "Alzheimer's disease dementia, amnestic presentation (mild stage)",
            ["Vascular cognitive impairment", "Dementia with Lewy bodies", "Depression-related "
             "cognitive impairment", "LATE (limbic-predominant TDP-43 encephalopathy)"],
            "Bilateral hippocampal and mesial temporal volume loss (left more than right) and "
            "widened parietal sulci; only minimal periventricular FLAIR signal.",
            "Insidious amnestic syndrome with a retrieval-resistant recall deficit, MMSE 21 / "
            "MoCA 17, and mesial temporal plus parietal atrophy fit Alzheimer's disease; "
            "confirm with amyloid/tau biomarkers (CSF or PET) before disease-modifying therapy.",
        ),
    ),
    DemoCase(
        "syn-07", "cadasil", _title("46-year-old woman with migraine with aura and two small strokes"),
        ("T1", "T2", "FLAIR"),
        _record(
            age=46, sex="female",
            complaint="Second episode of sudden left-sided clumsiness, resolved over two weeks.",
            history="Migraine with aura since age 22. Right-sided pure sensory stroke at 44. "
                    "Depression. Normotensive, non-smoker, no diabetes.",
            exam="Mild left pyramidal signs, slowed processing speed.",
            labs="Lipids, HbA1c, thrombophilia screen normal.",
            other="Imaging: MRI brain (T1, T2, FLAIR).",
        ),
        {"MoCA": 22, "Trail Making B (s)": 145},
        _truth(
            "CADASIL (cerebral autosomal dominant arteriopathy with subcortical infarcts and "
            "leukoencephalopathy)",
            ["Sporadic small-vessel disease", "Multiple sclerosis", "Fabry disease",
             "CARASIL (HTRA1)"],
            "Confluent symmetric periventricular and deep white-matter hyperintensities with "
            "involvement of both anterior temporal poles and external capsules, and small "
            "lacunes in the basal ganglia and left thalamus.",
            "Early-onset small-vessel disease without vascular risk factors, migraine with aura "
            "and anterior temporal pole/external capsule WMH point to CADASIL; a "
            "cysteine-altering NOTCH3 variant confirms it.",
        ),
    ),
    DemoCase(
        "syn-08", "pml", _title("55-year-old man with progressive left visual field loss"),
        ("T1", "FLAIR", "DWI"),
        _record(
            age=55, sex="male",
            complaint="Six weeks of bumping into objects on the left and difficulty reading.",
            history="Chronic lymphocytic leukaemia treated with rituximab and bendamustine; "
                    "last cycle four months ago. No fever.",
            exam="Left homonymous hemianopia, left visual neglect, no weakness.",
            labs="Lymphocytes 0.4 ×10⁹/L, CD4 180/µL, IgG 4.1 g/L.",
            other="Imaging: MRI brain (T1, FLAIR, DWI).",
        ),
        {"MoCA": 24},
        _truth(
            "Progressive multifocal leukoencephalopathy (JC virus)",
            ["Lymphoma infiltration", "Posterior reversible encephalopathy", "Subacute "
             "infarct", "HIV or CMV encephalitis"],
            "Right parieto-occipital subcortical white-matter lesion reaching the U-fibres: "
            "FLAIR bright, markedly T1-hypointense, bright DWI rim at the advancing edge, no "
            "mass effect.",
            "A non-enhancing, non-mass-forming subcortical lesion with U-fibre involvement, a "
            "DWI-bright leading edge and T1 hypointensity in an immunosuppressed patient is "
            "typical of PML; CSF JC virus PCR confirms it.",
        ),
    ),
    DemoCase(
        "syn-09", "caa", _title("74-year-old woman with brief recurrent tingling spells"),
        ("T1", "SWI", "FLAIR"),
        _record(
            age=74, sex="female",
            complaint="Recurrent stereotyped 10-minute spells of tingling spreading over the "
                      "right hand and face.",
            history="Mild hypertension. No anticoagulants; takes aspirin for 'prevention'.",
            exam="Normal neurological examination between spells.",
            labs="Normal blood count, INR 1.0, platelets 210 ×10⁹/L.",
            other="Imaging: MRI brain (T1, SWI, FLAIR).",
        ),
        {"MoCA": 24},
        _truth(
            "Probable cerebral amyloid angiopathy (Boston criteria 2.0)",
            ["Hypertensive arteriopathy", "Transient ischaemic attacks", "Focal seizures",
             "Cavernous malformations (familial)"],
            "Multiple strictly lobar cortico-subcortical microbleeds with posterior predominance "
            "in both hemispheres, right parietal convexity superficial siderosis, deep grey "
            "nuclei spared; mild periventricular FLAIR hyperintensity.",
            "Strictly lobar microbleeds plus cortical superficial siderosis in a patient over 50 "
            "meet probable CAA; the spells are transient focal neurological episodes (amyloid "
            "spells), so aspirin should be reconsidered and anticoagulation avoided.",
        ),
    ),
    DemoCase(
        "syn-10", "nph", _title("76-year-old man with gait decline and urinary urgency"),
        ("T1", "FLAIR", "T2"),
        _record(
            age=76, sex="male",
            complaint="Eighteen months of slow, shuffling, broad-based gait with freezing at "
                      "doorways, urinary urgency, and slowed thinking.",
            history="Hypertension. No head injury, meningitis or subarachnoid haemorrhage.",
            exam="Magnetic gait, short steps, turns in seven steps; no rigidity or tremor in "
                 "the arms; normal fundi.",
            labs="Normal blood count, glucose, B12 and TSH.",
            other="Imaging: MRI brain (T1, FLAIR, T2).",
        ),
        {"MoCA": 23, "Timed Up and Go (s)": 19},
        _truth(
            "Idiopathic normal-pressure hydrocephalus",
            ["Vascular parkinsonism / small-vessel disease", "Neurodegenerative atrophy (ex "
             "vacuo)", "Obstructive hydrocephalus", "Progressive supranuclear palsy"],
            "Enlarged lateral and third ventricles out of proportion to the sulci, tight "
            "high-convexity sulci (DESH) and a thin periventricular FLAIR halo.",
            "Ventriculomegaly disproportionate to atrophy with tight high-convexity sulci and "
            "the triad of gait apraxia, urgency and slowing suggests iNPH; a tap test or "
            "external lumbar drainage predicts shunt response.",
        ),
    ),
)


TASKS: tuple[DemoTask, ...] = tuple(sorted((*SINGLE_TURN, *MULTI_TURN), key=lambda t: t.task_id))

# Fictional models: invented names, each with a different mix of answer variants.
MODEL_PROFILES: dict[str, dict[str, float]] = {
    "meridian-med-2": {"correct": 0.55, "reasoning": 0.1, "knowledge": 0.1, "grounding": 0.15,
                       "perceptual": 0.05, "hallucination": 0.05},
    "cortex-lm-34b": {"correct": 0.4, "reasoning": 0.15, "knowledge": 0.15, "grounding": 0.2,
                      "perceptual": 0.05, "hallucination": 0.05},
    "nimbus-vision-pro": {"correct": 0.45, "reasoning": 0.25, "knowledge": 0.1,
                          "grounding": 0.1, "perceptual": 0.05, "hallucination": 0.05},
    "aurora-vl-7b": {"correct": 0.25, "perceptual": 0.25, "hallucination": 0.25,
                     "grounding": 0.1, "knowledge": 0.1, "reasoning": 0.05},
}
MODEL_STYLES: dict[str, tuple[str, ...]] = {
    "meridian-med-2": ("structured", "impression"),
    "cortex-lm-34b": ("prose", "stepwise"),
    "nimbus-vision-pro": ("impression", "prose"),
    "aurora-vl-7b": ("prose", "structured"),
}

# What a fictional model spends per answer: tokens per image shown and an invented price in USD
# per 1M input / output tokens (not any real system's).
MODEL_USAGE: dict[str, dict[str, float]] = {
    "meridian-med-2": {"image_tokens": 1105, "input": 2.0, "output": 8.0},
    "cortex-lm-34b": {"image_tokens": 256, "input": 0.3, "output": 0.6},
    "nimbus-vision-pro": {"image_tokens": 1700, "input": 3.0, "output": 12.0},
    "aurora-vl-7b": {"image_tokens": 576, "input": 0.1, "output": 0.2},
}

# Synthetic exam takers: a mix of answer variants per role (students err more in reasoning and
# knowledge, physicians less); each person's share of correct answers is scaled by a skill.
HUMAN_PROFILES: dict[str, dict[str, float]] = {
    "student": {"correct": 0.45, "reasoning": 0.2, "knowledge": 0.2, "perceptual": 0.1,
                "grounding": 0.05},
    "physician": {"correct": 0.7, "reasoning": 0.1, "knowledge": 0.05, "perceptual": 0.1,
                  "grounding": 0.05},
}
HUMAN_SKILLS: dict[str, tuple[float, ...]] = {
    "student": (0.7, 0.85, 1.0, 1.1, 1.25),
    "physician": (0.8, 0.95, 1.05, 1.2),
}

# The rank of the reference diagnosis in a differential answer of each variant (None: absent),
# as the synthetic grader reports it.
VARIANT_RANKS: dict[str, int | None] = {
    "correct": 1, "correct_brief": 1, "reasoning": 2, "knowledge": 3, "grounding": 2,
    "perceptual": None, "hallucination": None,
}

# The leading answer of each level-3 variant at each stage (first answer, then after each
# revealed stage) and whether it matches the reference answer, read off the texts above.
_F, _T = False, True
STAGE_ANSWERS: dict[str, dict[str, tuple[tuple[str, bool], ...]]] = {
    "syn-t04": {  # reference: multiple sclerosis (once the CSF bands substitute for DIT)
        "correct": (("CIS", _F), ("CIS", _F), ("relapsing-remitting MS", _T)),
        "correct_brief": (("CIS", _F), ("CIS", _F), ("MS", _T)),
        "perceptual": (("CIS", _F), ("CIS", _F), ("CIS", _F)),
        "reasoning": (("possible MS", _F), ("MS", _T), ("MS", _T)),
        "knowledge": (("CIS", _F), ("CIS", _F), ("CIS", _F)),
        "grounding": (("relapsing-remitting MS", _T), ("MS", _T), ("MS", _T)),
        "hallucination": (("CIS", _F), ("CIS", _F), ("MS", _T)),
    },
    "syn-t06": {  # reference: HSV-1 encephalitis
        "correct": (("HSV encephalitis", _T),) * 4,
        "correct_brief": (("HSV encephalitis", _T),) * 4,
        "perceptual": (("septic encephalopathy", _F), ("focal encephalitis", _F),
                       ("viral encephalitis", _F), ("HSV-1 encephalitis", _T)),
        "reasoning": (("HSV encephalitis", _T), ("HSV encephalitis", _T), ("glioma", _F),
                      ("HSV encephalitis", _T)),
        "knowledge": (("HSV encephalitis", _T),) * 4,
        "grounding": (("HSV encephalitis", _T),) * 4,
        "hallucination": (("HSV encephalitis", _T),) * 4,
    },
    "syn-t09": {  # reference: CADASIL
        "correct": (("CADASIL", _T),) * 3,
        "correct_brief": (("CADASIL", _T),) * 3,
        "perceptual": (("sporadic small-vessel disease", _F),) * 3,
        "reasoning": (("multiple sclerosis", _F),) * 3,
        "knowledge": (("hypertensive small-vessel disease", _F), ("CADASIL", _T),
                      ("CARASIL", _F)),
        "grounding": (("CADASIL", _T),) * 3,
        "hallucination": (("hereditary CAA", _F), ("hereditary CAA", _F),
                          ("CAA or CADASIL", _F)),
    },
}

# The stages written to contradict a plausible wrong first hypothesis (the bundle's
# `disconfirming`, one mark per stage): the CSF-specific bands (CIS -> MS), the HSV-1 PCR, and
# the family history and NOTCH3 result (sporadic small-vessel disease -> CADASIL).
DISCONFIRMING: dict[str, tuple[bool, ...]] = {
    "syn-t04": (False, True),
    "syn-t06": (False, False, True),
    "syn-t09": (True, True),
}
