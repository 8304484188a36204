"""Synthetic cases, tasks and answer variants of the demo bundle (text only, no patient data).

Every record, case title and answer is invented for the demo. Each task carries a bank of
answer variants: correct ones and ones written to show one error class of the Neural-MedBench
taxonomy (perceptual, reasoning, knowledge, grounding, hallucination). `demo.bundle`
turns the variants into model responses with seeded choices.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SYNTHETIC_BANNER = "SYNTHETIC — not a real patient"
ERROR_TAGS = ("perceptual", "reasoning", "knowledge", "grounding", "hallucination")


@dataclass(frozen=True)
class DemoCase:
    case_id: str
    kind: str  # key of demo.images.PAINTERS
    title: str
    sequences: tuple[str, ...]
    ehr: str
    scores: dict[str, float]
    ground_truth: dict[str, object]
    coarse: tuple[str, ...] = ()  # sequences stored at twice the voxel size (another grid)


@dataclass(frozen=True)
class Variant:
    """One way to answer a task: findings, interpretation and conclusion (+ stage answers)."""

    correct: bool
    tags: tuple[str, ...]
    findings: str
    reasoning: str
    conclusion: str
    turns: tuple[str, ...] = ()


@dataclass(frozen=True)
class DemoTask:
    task_id: str
    case_id: str
    family: str
    level: int
    prompt: str
    stages: tuple[str, ...]
    variants: dict[str, Variant] = field(default_factory=dict)


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


def _v(correct: bool, tags: str, findings: str, reasoning: str, conclusion: str,
       *turns: str) -> Variant:
    return Variant(correct, tuple(t for t in tags.split() if t), findings, reasoning, conclusion,
                   tuple(turns))


TASKS: tuple[DemoTask, ...] = (
    DemoTask(
        "syn-t01", "syn-01", "lesion", 1,
        "Using the MRI series provided, identify the acute abnormality: which sequence(s) show "
        "it, which hemisphere, and which vascular territory?",
        (),
        {
            "correct": _v(
                True, "",
                "The DWI series shows a cortical-subcortical hyperintensity in the left insula, "
                "frontal operculum and pre/postcentral gyri extending into the left corona "
                "radiata, with matching low signal on the ADC map.",
                "Bright DWI with dark ADC is true restricted diffusion, i.e. cytotoxic oedema, "
                "and the distribution follows the left middle cerebral artery. FLAIR shows no "
                "clear corresponding hyperintensity yet.",
                "Acute infarct in the left MCA territory, visible on DWI and ADC.",
            ),
            "correct_brief": _v(
                True, "",
                "Left hemisphere: restricted diffusion (DWI high, ADC low) over the insula, "
                "opercular cortex and subjacent white matter.",
                "The pattern is wedge-like, cortical and subcortical, and respects the left MCA "
                "distribution; the T1 and FLAIR images are nearly normal at this stage.",
                "Acute left MCA territory ischaemic stroke (DWI/ADC).",
            ),
            "perceptual": _v(
                False, "perceptual",
                "There is a patchy DWI hyperintensity in the left frontal region, but the ADC "
                "map looks normal or slightly bright in the same area.",
                "Without a low ADC this is T2 shine-through rather than restricted diffusion, "
                "so I do not see an acute ischaemic lesion.",
                "No definite acute infarct; the DWI signal is shine-through from an older lesion.",
            ),
            "reasoning": _v(
                False, "reasoning",
                "DWI is bright and ADC is dark in the left insula, frontal operculum and "
                "precentral region; FLAIR is essentially normal.",
                "Because the FLAIR is negative the lesion cannot be ischaemic, since an infarct "
                "large enough to cause these DWI changes would always be visible on FLAIR.",
                "Left fronto-insular restricted diffusion, more likely postictal than an infarct.",
            ),
            "knowledge": _v(
                False, "knowledge",
                "Restricted diffusion (DWI bright, ADC dark) involves the left insula, operculum "
                "and lateral frontal-parietal cortex.",
                "The insula and lateral convexity are supplied by the anterior cerebral artery, "
                "so this is an ACA infarct.",
                "Acute left anterior cerebral artery territory infarct.",
            ),
            "grounding": _v(
                False, "grounding",
                "The DWI series shows a bright cortical-subcortical lesion in the right insula and "
                "right frontal operculum with low ADC.",
                "The territory is that of the right MCA, which fits a right-sided syndrome.",
                "Acute right MCA territory infarct.",
            ),
            "hallucination": _v(
                False, "hallucination",
                "There is restricted diffusion in the left MCA territory, and the susceptibility "
                "series shows blooming within the infarct in keeping with haemorrhagic "
                "transformation; there is also 6 mm of midline shift.",
                "Haemorrhagic transformation with mass effect makes this a complicated, "
                "subacute infarct.",
                "Left MCA infarct with haemorrhagic transformation and midline shift.",
            ),
        },
    ),
    DemoTask(
        "syn-t02", "syn-01", "rationale", 2,
        "She woke with the deficit; she was last known well 9 hours ago. Using the images and "
        "the record, explain what the DWI and FLAIR appearance implies about the timing of the "
        "stroke and about acute treatment.",
        (),
        {
            "correct": _v(
                True, "",
                "There is a large left MCA territory DWI lesion with low ADC, but the FLAIR "
                "images show no corresponding hyperintensity: a DWI-FLAIR mismatch.",
                "A mismatch identifies patients likely to be within about 4.5 hours of onset; in "
                "the WAKE-UP trial such patients with unknown onset benefited from IV alteplase. "
                "Glucose, platelets and INR are normal and she is not anticoagulated.",
                "Treat as probably <4.5 h old: offer IV thrombolysis and obtain urgent CTA/MRA "
                "for a proximal occlusion suitable for thrombectomy; AF suggests cardioembolism.",
            ),
            "correct_brief": _v(
                True, "",
                "DWI-positive, ADC-low left MCA lesion; FLAIR negative in the same region.",
                "FLAIR signal takes hours to appear, so a negative FLAIR despite 9 h since last "
                "known well means the stroke probably began after she fell asleep, likely within "
                "the thrombolysis window. No laboratory contraindication is recorded.",
                "Mismatch-guided IV thrombolysis is reasonable, with vessel imaging for "
                "thrombectomy (NIHSS 14).",
            ),
            "perceptual": _v(
                False, "perceptual",
                "The left MCA lesion is bright on DWI and is also clearly hyperintense on FLAIR.",
                "A DWI-FLAIR match means the infarct is likely older than 4.5 hours.",
                "Outside the thrombolysis window; consider thrombectomy assessment only.",
            ),
            "reasoning": _v(
                False, "reasoning",
                "DWI shows restricted diffusion in the left MCA territory and the FLAIR is "
                "negative.",
                "Because she was last seen well 9 hours ago, the onset time must be taken as 9 "
                "hours, and the imaging cannot change that.",
                "Thrombolysis is contraindicated; give aspirin and admit to the stroke unit.",
            ),
            "knowledge": _v(
                False, "knowledge",
                "DWI is bright in the left MCA territory and FLAIR shows no change.",
                "A DWI-FLAIR mismatch indicates an infarct older than 24 hours, because FLAIR "
                "signal fades first and diffusion restriction persists for weeks.",
                "Late subacute stroke; no acute reperfusion therapy.",
            ),
            "grounding": _v(
                False, "grounding",
                "Left MCA DWI lesion with a negative FLAIR, consistent with a recent onset.",
                "The mismatch would support thrombolysis, but the record shows she takes warfarin "
                "with an INR of 2.8, which is a contraindication.",
                "No thrombolysis; consider thrombectomy after vessel imaging.",
            ),
            "hallucination": _v(
                False, "hallucination",
                "Left MCA DWI lesion, FLAIR negative; the SWI series shows more than ten "
                "microbleeds and a susceptibility vessel sign in the left M1 segment.",
                "The microbleed burden raises the risk of haemorrhage after thrombolysis.",
                "Avoid thrombolysis because of the microbleeds; thrombectomy only.",
            ),
        },
    ),
    DemoTask(
        "syn-t03", "syn-02", "differential", 2,
        "Considering the record and the MRI, what is the most likely diagnosis? Give a ranked "
        "differential of at least three conditions.",
        (),
        {
            "correct": _v(
                True, "",
                "FLAIR and T2 show ovoid periventricular lesions oriented perpendicular to the "
                "lateral ventricles in both hemispheres, a left frontal juxtacortical lesion and "
                "a right middle cerebellar peduncle lesion; one left periventricular lesion is "
                "dark on T1.",
                "A young woman with a subacute sensory syndrome and lesions in three typical "
                "locations meets dissemination in space; the lesion shape argues against small "
                "vessel disease.",
                "1) Multiple sclerosis (first attack, likely relapsing-remitting); 2) MOGAD; "
                "3) NMOSD; 4) ADEM or neurosarcoidosis.",
            ),
            "correct_brief": _v(
                True, "",
                "Multiple ovoid periventricular (Dawson-finger-like), juxtacortical and "
                "infratentorial T2/FLAIR lesions; a T1 black hole on the left.",
                "The history is of a partial myelitis-like sensory episode at 29; the distribution "
                "of brain lesions is classic for demyelination.",
                "Most likely MS; differential NMOSD, MOG antibody disease, neurosarcoidosis.",
            ),
            "perceptual": _v(
                False, "perceptual",
                "I see only a few punctate subcortical white-matter hyperintensities; no lesion "
                "touches the ventricles and the posterior fossa is normal.",
                "Nonspecific punctate white-matter lesions are common in young migraineurs and do "
                "not explain a leg sensory syndrome.",
                "1) Nonspecific WMH (migraine); 2) spinal cord lesion to be imaged; 3) MS less "
                "likely.",
            ),
            "reasoning": _v(
                False, "reasoning",
                "There are periventricular ovoid lesions, a juxtacortical lesion and an "
                "infratentorial lesion on FLAIR.",
                "Since this is her first episode, MS cannot be considered, and multifocal white "
                "matter lesions in a smoker are best explained by small vessel disease.",
                "1) Small-vessel ischaemic disease; 2) migraine; 3) MS.",
            ),
            "knowledge": _v(
                False, "knowledge",
                "Periventricular ovoid lesions perpendicular to the ventricles with juxtacortical "
                "and infratentorial lesions.",
                "Dawson's fingers are the hallmark of neuromyelitis optica, which typically "
                "produces ovoid periventricular lesions in young women.",
                "1) NMOSD; 2) MS; 3) ADEM.",
            ),
            "grounding": _v(
                True, "grounding",
                "Ovoid periventricular lesions are present, with a right frontal juxtacortical "
                "lesion and a lesion in the left middle cerebellar peduncle seen on the T1 series.",
                "The lesion locations satisfy dissemination in space, and the clinical picture "
                "is a first demyelinating event.",
                "Most likely MS; differential MOGAD, NMOSD, sarcoidosis.",
            ),
            "hallucination": _v(
                True, "hallucination",
                "Periventricular and juxtacortical FLAIR lesions; on post-contrast T1 two lesions "
                "show open-ring enhancement, and the cervical cord has a short-segment lesion.",
                "Simultaneous enhancing and non-enhancing lesions prove dissemination in time.",
                "Multiple sclerosis, McDonald criteria fulfilled on MRI alone; differential "
                "NMOSD, ADEM.",
            ),
        },
    ),
    DemoTask(
        "syn-t04", "syn-02", "rationale", 3,
        "Explain whether this first episode can be diagnosed as multiple sclerosis now, and "
        "what further information would change your reasoning.",
        (
            "Serum AQP4-IgG and MOG-IgG (cell-based assays) are negative.",
            "CSF: 4 cells/µL, protein 0.42 g/L, six IgG oligoclonal bands present in CSF and "
            "absent in serum.",
        ),
        {
            "correct": _v(
                True, "",
                "Periventricular, juxtacortical and infratentorial T2/FLAIR lesions meet "
                "dissemination in space.",
                "Dissemination in time is not shown: this is a first attack and there is no "
                "contrast study to show enhancing and non-enhancing lesions together.",
                "Clinically isolated syndrome with high MS risk; DIT or CSF-specific oligoclonal "
                "bands are needed, and antibody testing to exclude mimics.",
                "Negative AQP4 and MOG antibodies make NMOSD and MOGAD unlikely, which "
                "strengthens MS, but dissemination in time is still not demonstrated.",
                "Under McDonald 2017, CSF-specific oligoclonal bands substitute for dissemination "
                "in time: with DIS on MRI this establishes relapsing-remitting MS, and "
                "disease-modifying therapy can be discussed.",
            ),
            "correct_brief": _v(
                True, "",
                "Lesions in three of the four DIS regions (periventricular, juxtacortical, "
                "infratentorial).",
                "No evidence of DIT on a single unenhanced MRI after a first attack.",
                "Not yet MS by McDonald 2017; call it CIS and look for DIT or oligoclonal bands.",
                "Antibody-negative: mimics less likely; diagnosis unchanged (still CIS).",
                "OCB positive and unique to CSF: substitutes for DIT, so MS is diagnosed.",
            ),
            "perceptual": _v(
                False, "perceptual",
                "I can identify periventricular lesions only; the juxtacortical region and the "
                "posterior fossa look normal.",
                "With a single DIS region, dissemination in space is not met.",
                "Not MS; a clinically isolated syndrome with low conversion risk.",
                "Antibodies negative; no change: DIS is still not met.",
                "Oligoclonal bands cannot make the diagnosis without DIS; remains CIS, repeat MRI "
                "in 6 months.",
            ),
            "reasoning": _v(
                False, "reasoning",
                "Periventricular, juxtacortical and infratentorial lesions are present.",
                "These lesions establish DIS, and DIT will be addressed by testing.",
                "Possible MS pending further tests.",
                "Since AQP4 and MOG antibodies are negative, the alternatives are excluded and "
                "the diagnosis of MS is therefore confirmed now.",
                "The oligoclonal bands add nothing further; the diagnosis was already confirmed "
                "by the negative antibodies.",
            ),
            "knowledge": _v(
                False, "knowledge",
                "Typical periventricular, juxtacortical and infratentorial demyelinating lesions.",
                "DIS is met; DIT is not shown on this single scan.",
                "CIS; MS not yet confirmed.",
                "Negative antibodies lower the probability of NMOSD and MOGAD.",
                "Oligoclonal bands are nonspecific and cannot replace dissemination in time; a new "
                "lesion on follow-up MRI is required before MS can be diagnosed.",
            ),
            "grounding": _v(
                False, "grounding",
                "Periventricular and infratentorial lesions, plus a juxtacortical lesion.",
                "The record notes an earlier episode of optic neuritis, so this is a second attack "
                "and dissemination in time is already met clinically.",
                "Relapsing-remitting MS can be diagnosed now.",
                "Antibody-negative, consistent with MS.",
                "OCB confirm intrathecal synthesis; the diagnosis was already established by the "
                "previous optic neuritis.",
            ),
            "hallucination": _v(
                True, "hallucination",
                "Periventricular, juxtacortical and infratentorial lesions; most lesions show a "
                "central vein sign on the SWI series.",
                "DIS is met and the central vein sign supports demyelination, but DIT is not yet "
                "shown.",
                "CIS with a high likelihood of MS.",
                "Negative antibodies make the main mimics unlikely.",
                "CSF-specific oligoclonal bands substitute for DIT: MS is diagnosed.",
            ),
        },
    ),
    DemoTask(
        "syn-t05", "syn-03", "lesion", 2,
        "Using the images and the seizure description, localise the lesion, name the sequences "
        "that show it, and explain whether it is concordant with the semiology and EEG.",
        (),
        {
            "correct": _v(
                True, "",
                "The right hippocampus is smaller than the left and bright on T2 and FLAIR; the "
                "left hippocampus is normal.",
                "Volume loss with T2/FLAIR hyperintensity is hippocampal sclerosis. Left-hand "
                "dystonic posturing lateralises contralaterally and right-hand automatisms "
                "ipsilaterally, both to the right, matching the right anterior temporal EEG.",
                "Right hippocampal sclerosis, concordant: refer for pre-surgical evaluation.",
            ),
            "correct_brief": _v(
                True, "",
                "Right mesial temporal lobe: atrophic hippocampus with increased T2/FLAIR signal.",
                "Epigastric aura, déjà vu, oral automatisms and contralateral (left) dystonia "
                "point to right mesial temporal onset, as does the F8/T8 EEG focus.",
                "Right MTS, concordant across imaging, semiology and EEG.",
            ),
            "perceptual": _v(
                False, "perceptual",
                "Both hippocampi appear symmetric in size and signal on T2 and FLAIR, and I "
                "see no other lesion.",
                "The semiology and EEG suggest right temporal onset, but the MRI is negative.",
                "MRI-negative right temporal epilepsy; needs PET and intracranial EEG.",
            ),
            "reasoning": _v(
                False, "reasoning",
                "The right hippocampus is small and bright on T2/FLAIR.",
                "Because the FLAIR signal is increased, the change must be acute postictal oedema "
                "rather than a structural lesion, so it cannot be the epileptogenic zone.",
                "Transient postictal change; repeat the MRI before drawing conclusions.",
            ),
            "knowledge": _v(
                False, "knowledge",
                "Right hippocampal atrophy with T2/FLAIR hyperintensity.",
                "Dystonic posturing lateralises to the ipsilateral hemisphere, so left-hand "
                "dystonia indicates a left-sided onset, discordant with the MRI.",
                "Right MTS but discordant semiology; bilateral onset suspected.",
            ),
            "grounding": _v(
                False, "grounding",
                "The left hippocampus shows volume loss and increased FLAIR signal.",
                "Mesial temporal sclerosis fits the febrile seizure history.",
                "Left hippocampal sclerosis, concordant with the EEG.",
            ),
            "hallucination": _v(
                False, "hallucination",
                "There is a cortical thickening with a transmantle sign in the right frontal lobe "
                "and blurring of the grey-white junction; the hippocampi are normal.",
                "A transmantle sign is characteristic of focal cortical dysplasia type IIb.",
                "Right frontal FCD; the temporal semiology is propagation.",
            ),
        },
    ),
    DemoTask(
        "syn-t06", "syn-04", "differential", 3,
        "What is the most likely diagnosis and what would you do immediately? Revise your "
        "answer as new results arrive.",
        (
            "EEG: lateralised periodic discharges over the left temporal region.",
            "CSF: 85 white cells/µL (90% lymphocytes), 120 red cells/µL, protein 0.9 g/L, "
            "glucose ratio 0.6.",
            "CSF PCR: herpes simplex virus type 1 DNA detected.",
        ),
        {
            "correct": _v(
                True, "",
                "FLAIR and DWI show swollen, hyperintense cortex in the left mesial and anterior "
                "temporal lobe and left insula, sparing the basal ganglia.",
                "Fever, encephalopathy, olfactory hallucinations and seizures with this limbic "
                "and insular pattern are HSV encephalitis until proven otherwise.",
                "Most likely HSV-1 encephalitis; start IV aciclovir 10 mg/kg every 8 h now, "
                "then LP; differential autoimmune limbic encephalitis and VZV.",
                "Left temporal LPDs fit HSV encephalitis; continue aciclovir and treat seizures.",
                "Lymphocytic pleocytosis with red cells and raised protein supports a "
                "necrotising viral encephalitis.",
                "Confirmed HSV-1 encephalitis: complete 14-21 days of IV aciclovir, monitor renal "
                "function, and watch for post-HSV NMDAR encephalitis.",
            ),
            "correct_brief": _v(
                True, "",
                "Left temporal and insular cortical FLAIR/DWI hyperintensity with swelling.",
                "The clinical-radiological picture is typical of HSV encephalitis.",
                "HSV encephalitis: empirical IV aciclovir immediately, do not wait for results.",
                "LPDs over the left temporal lobe: consistent; keep aciclovir.",
                "Viral CSF profile with red cells: still HSV first.",
                "PCR positive: HSV-1 encephalitis confirmed; 14-21 days of aciclovir.",
            ),
            "perceptual": _v(
                False, "perceptual",
                "I see no focal parenchymal signal abnormality on FLAIR or DWI.",
                "With a normal MRI, fever and confusion are more likely septic or metabolic "
                "encephalopathy (sodium 131).",
                "Septic encephalopathy; blood cultures and correct sodium; LP if no improvement.",
                "LPDs suggest a focal process I may have missed; start aciclovir.",
                "Lymphocytic CSF: viral encephalitis likely.",
                "HSV-1 encephalitis; continue aciclovir.",
            ),
            "reasoning": _v(
                False, "reasoning",
                "Left mesial temporal and insular FLAIR/DWI hyperintensity.",
                "This pattern is typical of HSV encephalitis, but it can wait for the CSF result "
                "because aciclovir is nephrotoxic.",
                "Probable HSV encephalitis; LP first and start aciclovir if CSF is abnormal.",
                "LPDs are consistent; still awaiting CSF.",
                "The red cells mean the tap was traumatic, so the pleocytosis is artefact and an "
                "infection is unlikely; reconsider a glioma.",
                "PCR positive: HSV encephalitis after all; start aciclovir.",
            ),
            "knowledge": _v(
                False, "knowledge",
                "Left temporal lobe and insular FLAIR/DWI hyperintensity.",
                "Typical of herpes encephalitis, which in adults is mostly caused by HSV-2.",
                "HSV encephalitis: start IV ganciclovir, the first-line agent.",
                "LPDs support the diagnosis.",
                "CSF consistent with viral encephalitis.",
                "HSV-1 confirmed: continue ganciclovir for 7 days.",
            ),
            "grounding": _v(
                True, "grounding",
                "FLAIR hyperintensity and swelling of the right mesial temporal lobe and right "
                "insula.",
                "A limbic pattern with fever and seizures suggests HSV encephalitis.",
                "HSV encephalitis: start IV aciclovir immediately.",
                "EEG discharges support the diagnosis.",
                "Viral CSF profile.",
                "HSV-1 encephalitis confirmed; 14-21 days of aciclovir.",
            ),
            "hallucination": _v(
                True, "hallucination",
                "Left temporal FLAIR hyperintensity with petechial haemorrhages on SWI and gyral "
                "enhancement on post-contrast T1.",
                "Haemorrhagic necrotising temporal encephalitis is characteristic of HSV.",
                "HSV encephalitis; start IV aciclovir at once.",
                "LPDs: consistent.",
                "CSF red cells fit the haemorrhages seen on SWI.",
                "Confirmed HSV-1 encephalitis; complete aciclovir.",
            ),
        },
    ),
    DemoTask(
        "syn-t07", "syn-05", "differential", 1,
        "Based on the images alone, give the most likely diagnosis and two alternatives.",
        (),
        {
            "correct": _v(
                True, "",
                "Right frontal mass with a thick, irregular rim of enhancement on post-contrast "
                "T1, a dark necrotic centre and extensive FLAIR-hyperintense vasogenic oedema.",
                "A solitary necrotic mass with nodular rim enhancement in an older adult is most "
                "often a high-grade glioma; abscess usually has a thin smooth rim.",
                "Glioblastoma; alternatives: solitary metastasis, pyogenic abscess.",
            ),
            "correct_brief": _v(
                True, "",
                "Ring-enhancing right frontal lesion with central necrosis and surrounding oedema.",
                "Thick irregular enhancement favours tumour over abscess or demyelination.",
                "Glioblastoma (IDH-wildtype) most likely; metastasis or abscess next.",
            ),
            "perceptual": _v(
                False, "perceptual",
                "There is a homogeneously enhancing, solid right frontal mass with little oedema.",
                "Solid homogeneous enhancement in deep white matter suggests lymphoma.",
                "Primary CNS lymphoma; alternatives glioblastoma, metastasis.",
            ),
            "reasoning": _v(
                False, "reasoning",
                "Right frontal lesion with a thick irregular enhancing rim, central necrosis and "
                "extensive oedema.",
                "Every ring-enhancing lesion with central necrosis should be considered an abscess "
                "first, regardless of the rim's shape.",
                "Pyogenic abscess; alternatives glioblastoma, metastasis.",
            ),
            "knowledge": _v(
                False, "knowledge",
                "Right frontal necrotic mass with ring enhancement and vasogenic oedema.",
                "Glioblastomas do not enhance; ring enhancement indicates a metastasis.",
                "Solitary metastasis; alternatives abscess, lymphoma.",
            ),
            "grounding": _v(
                True, "grounding",
                "Left frontal mass with thick irregular rim enhancement, central necrosis and "
                "oedema on FLAIR.",
                "Nodular rim enhancement and necrosis favour a high-grade glioma.",
                "Glioblastoma; alternatives metastasis and abscess.",
            ),
            "hallucination": _v(
                False, "hallucination",
                "Right frontal ring-enhancing lesion plus two further enhancing nodules in the "
                "cerebellum and a dural tail along the falx.",
                "Multiple lesions at the grey-white junction point to haematogenous spread.",
                "Multiple metastases; alternatives septic emboli, meningioma.",
            ),
        },
    ),
    DemoTask(
        "syn-t08", "syn-06", "rationale", 2,
        "Explain how the imaging and the cognitive scores support or argue against Alzheimer's "
        "disease, and what you would do next.",
        (),
        {
            "correct": _v(
                True, "",
                "T1 shows bilateral hippocampal and mesial temporal volume loss, worse on the "
                "left, and widened parietal sulci; FLAIR shows only minimal periventricular "
                "signal.",
                "A three-year amnestic decline with delayed recall 0/5 not helped by cues, MMSE "
                "21 and MoCA 17 (mild dementia, CDR 1) fits this atrophy pattern; the small "
                "vessel burden is too slight to explain it, and reversible causes were excluded.",
                "Probable Alzheimer's disease; confirm with CSF Aβ42/40 and p-tau or amyloid "
                "PET before considering anti-amyloid therapy.",
            ),
            "correct_brief": _v(
                True, "",
                "Mesial temporal atrophy (left > right) and posterior parietal sulcal widening.",
                "An amnestic storage deficit with MMSE 21 / MoCA 17 and this topography is the "
                "typical Alzheimer phenotype; vascular changes are minimal.",
                "Alzheimer's disease, mild dementia stage; biomarker confirmation next.",
            ),
            "perceptual": _v(
                False, "perceptual",
                "The hippocampi are of normal volume and the sulci are age-appropriate.",
                "With normal structural imaging the memory complaints may be functional or mood "
                "related.",
                "Alzheimer's unlikely; screen for depression and repeat testing in a year.",
            ),
            "reasoning": _v(
                False, "reasoning",
                "Bilateral hippocampal atrophy with parietal sulcal widening; a few periventricular "
                "FLAIR hyperintensities.",
                "Because he has hypertension and some white-matter changes, the vascular "
                "explanation takes precedence over the atrophy.",
                "Vascular dementia; optimise blood pressure, no further work-up.",
            ),
            "knowledge": _v(
                False, "knowledge",
                "Hippocampal atrophy, left more than right.",
                "An MMSE of 21 is within the normal range for a 72-year-old, and hippocampal "
                "atrophy is specific to frontotemporal dementia.",
                "Behavioural-variant FTD rather than Alzheimer's.",
            ),
            "grounding": _v(
                True, "grounding",
                "Hippocampal atrophy, right more than left, on the FLAIR series.",
                "An MMSE of 27 with a MoCA of 24 suggests mild cognitive impairment due to AD.",
                "Probable Alzheimer's disease; biomarkers next.",
            ),
            "hallucination": _v(
                False, "hallucination",
                "Hippocampal atrophy plus multiple cortical microbleeds on SWI and an old left "
                "frontal cortical infarct.",
                "The infarct and microbleeds indicate a substantial vascular contribution.",
                "Mixed dementia; anti-amyloid therapy contraindicated by microbleeds.",
            ),
        },
    ),
    DemoTask(
        "syn-t09", "syn-07", "lesion", 3,
        "Describe the distribution of the white-matter abnormalities and which features are "
        "distinctive.",
        (
            "Family history: her father had recurrent strokes from age 50 and dementia; a "
            "paternal aunt had migraine with aura. Which lesion locations now matter most?",
            "Genetic testing: heterozygous cysteine-altering NOTCH3 variant. Summarise the "
            "imaging-genetic correlation.",
        ),
        {
            "correct": _v(
                True, "",
                "Confluent, symmetric periventricular and deep white-matter hyperintensities on "
                "T2/FLAIR, involving both anterior temporal poles and the external capsules, "
                "with small lacunes in the basal ganglia and left thalamus.",
                "Anterior temporal pole and external capsule involvement are unusual in "
                "sporadic small-vessel disease and suggest a monogenic arteriopathy.",
                "Severe early-onset small-vessel disease with temporal pole and external "
                "capsule involvement: consider CADASIL.",
                "An autosomal dominant pattern makes the temporal poles and external capsules the "
                "key locations: they point to CADASIL rather than hypertensive disease.",
                "A cysteine-altering NOTCH3 variant confirms CADASIL; temporal pole WMH is the "
                "most specific imaging marker and the lacunes explain her strokes.",
            ),
            "correct_brief": _v(
                True, "",
                "Symmetric confluent WMH with anterior temporal pole and external capsule "
                "involvement; basal ganglia and thalamic lacunes.",
                "The temporal pole sign is distinctive.",
                "Pattern suggests CADASIL.",
                "Dominant family history plus temporal pole WMH: CADASIL most likely.",
                "NOTCH3 variant confirms CADASIL, matching the imaging.",
            ),
            "perceptual": _v(
                False, "perceptual",
                "Confluent periventricular and deep WMH; the temporal lobes and external capsules "
                "look normal.",
                "Without temporal pole involvement this is ordinary small-vessel disease.",
                "Sporadic small-vessel disease, unusually severe for age.",
                "The family history raises a hereditary cause, but the imaging is not typical.",
                "A NOTCH3 variant is surprising given the absence of temporal pole lesions.",
            ),
            "reasoning": _v(
                False, "reasoning",
                "Confluent WMH with anterior temporal pole and external capsule involvement and "
                "lacunes.",
                "Multifocal white matter lesions in a woman in her forties most likely represent "
                "demyelination.",
                "Multiple sclerosis.",
                "The family history of strokes is unrelated to her lesions.",
                "The NOTCH3 variant is probably incidental; MS remains the main diagnosis.",
            ),
            "knowledge": _v(
                False, "knowledge",
                "Confluent WMH with temporal pole and external capsule lesions and lacunes.",
                "Temporal pole involvement is typical of hypertensive arteriolosclerosis.",
                "Hypertensive small-vessel disease.",
                "The family history suggests an autosomal recessive disorder such as CADASIL.",
                "NOTCH3 confirms CARASIL, the NOTCH3-related recessive arteriopathy.",
            ),
            "grounding": _v(
                True, "grounding",
                "Confluent WMH, anterior temporal pole lesions and restricted diffusion in the "
                "external capsules on DWI.",
                "The temporal pole involvement is distinctive.",
                "Likely CADASIL.",
                "Dominant inheritance supports CADASIL.",
                "NOTCH3 confirms CADASIL.",
            ),
            "hallucination": _v(
                False, "hallucination",
                "Confluent WMH with numerous lobar microbleeds and cortical superficial "
                "siderosis over both convexities.",
                "Lobar bleeding markers point to an amyloid angiopathy.",
                "Hereditary cerebral amyloid angiopathy.",
                "Family history fits a hereditary CAA.",
                "NOTCH3 is unexpected; consider both diagnoses.",
            ),
        },
    ),
    DemoTask(
        "syn-t10", "syn-08", "rationale", 1,
        "From the images alone, explain what the lesion's appearance suggests about its nature.",
        (),
        {
            "correct": _v(
                True, "",
                "A right parieto-occipital subcortical white-matter lesion extends into the "
                "U-fibres; it is bright on FLAIR, markedly dark on T1, and has a DWI-bright rim "
                "at its advancing edge; there is no mass effect.",
                "Involvement of U-fibres without mass effect and a restricted-diffusion leading "
                "edge indicate a demyelinating process of oligodendrocytes rather than tumour or "
                "infarct; the shape does not follow an arterial territory.",
                "Progressive multifocal leukoencephalopathy is the leading interpretation.",
            ),
            "correct_brief": _v(
                True, "",
                "Right parieto-occipital subcortical lesion, FLAIR bright, T1 very dark, DWI "
                "bright at the rim, no mass effect.",
                "This is the classic scalloped, U-fibre-involving PML pattern.",
                "Likely PML (JC virus); check immune status and CSF JCV PCR.",
            ),
            "perceptual": _v(
                False, "perceptual",
                "A right parieto-occipital mass with local mass effect, effacing the sulci and "
                "compressing the occipital horn.",
                "Mass effect with T1 hypointensity suggests an infiltrating neoplasm.",
                "Low- or high-grade glioma.",
            ),
            "reasoning": _v(
                False, "reasoning",
                "Right parieto-occipital subcortical lesion with U-fibre involvement, no mass "
                "effect and DWI hyperintensity at the rim.",
                "DWI hyperintensity means restricted diffusion, and restricted diffusion means an "
                "infarct.",
                "Subacute right PCA territory infarct.",
            ),
            "knowledge": _v(
                False, "knowledge",
                "Right parieto-occipital subcortical FLAIR lesion involving the U-fibres without "
                "mass effect.",
                "This could be PML, which is caused by Epstein-Barr virus and usually enhances "
                "strongly.",
                "PML, EBV-related.",
            ),
            "grounding": _v(
                True, "grounding",
                "Left frontal subcortical FLAIR-bright lesion involving U-fibres without mass "
                "effect, dark on T1.",
                "U-fibre involvement without mass effect suggests PML.",
                "Progressive multifocal leukoencephalopathy.",
            ),
            "hallucination": _v(
                False, "hallucination",
                "Right parieto-occipital lesion with a thin enhancing ring on the post-contrast "
                "images and a central dot of enhancement.",
                "Ring enhancement with a central dot suggests an infectious granuloma.",
                "Toxoplasmosis or tuberculoma.",
            ),
        },
    ),
    DemoTask(
        "syn-t11", "syn-09", "lesion", 1,
        "Describe the abnormalities on the susceptibility-weighted series and their distribution.",
        (),
        {
            "correct": _v(
                True, "",
                "SWI shows multiple small round low-signal foci at the cortico-subcortical "
                "junction of both hemispheres, mostly parietal and occipital, plus curvilinear "
                "low signal along the right parietal convexity sulci; the basal ganglia, "
                "thalami and brainstem are spared.",
                "Strictly lobar microbleeds with cortical superficial siderosis are the "
                "haemorrhagic markers of cerebral amyloid angiopathy.",
                "Lobar microbleeds and right convexity siderosis: probable CAA pattern.",
            ),
            "correct_brief": _v(
                True, "",
                "Bilateral lobar cortico-subcortical microbleeds (posterior predominance) and "
                "right parietal superficial siderosis on SWI; no deep microbleeds.",
                "This distribution is that of amyloid angiopathy, not hypertensive arteriopathy.",
                "Probable CAA (Boston 2.0).",
            ),
            "perceptual": _v(
                False, "perceptual",
                "There are two microbleeds in the left basal ganglia and none in the lobes.",
                "Deep microbleeds indicate hypertensive arteriopathy.",
                "Hypertensive microangiopathy.",
            ),
            "reasoning": _v(
                False, "reasoning",
                "Multiple lobar cortico-subcortical microbleeds with posterior predominance and "
                "right parietal superficial siderosis.",
                "Since she has hypertension, any microbleeds are best attributed to hypertension.",
                "Hypertensive arteriopathy.",
            ),
            "knowledge": _v(
                False, "knowledge",
                "Lobar microbleeds, posterior predominance, right convexity siderosis.",
                "CAA characteristically affects the deep grey nuclei, whereas lobar microbleeds "
                "indicate hypertensive disease.",
                "Hypertensive arteriopathy; CAA unlikely.",
            ),
            "grounding": _v(
                True, "grounding",
                "Dark lobar foci on the FLAIR series with superficial siderosis over the left "
                "frontal convexity.",
                "Lobar microbleeds with siderosis suggest amyloid angiopathy.",
                "Probable CAA.",
            ),
            "hallucination": _v(
                False, "hallucination",
                "A 3 cm acute left occipital lobar haematoma with surrounding oedema, plus lobar "
                "microbleeds.",
                "A lobar haematoma in an older adult is often due to CAA.",
                "Acute CAA-related intracerebral haemorrhage.",
            ),
        },
    ),
    DemoTask(
        "syn-t12", "syn-10", "differential", 1,
        "Based on the images alone, what is the most likely diagnosis? Name two alternatives.",
        (),
        {
            "correct": _v(
                True, "",
                "The lateral and third ventricles are enlarged out of proportion to the sulci; "
                "the high-convexity sulci are tight, and there is a thin periventricular FLAIR "
                "halo.",
                "Disproportionately enlarged subarachnoid-space hydrocephalus (DESH) "
                "distinguishes NPH from atrophy, where sulci widen along with the ventricles.",
                "Idiopathic NPH; alternatives: ex-vacuo atrophy, obstructive hydrocephalus.",
            ),
            "correct_brief": _v(
                True, "",
                "Ventriculomegaly (Evans index above 0.3) with tight vertex sulci and "
                "periventricular FLAIR signal.",
                "Ventricles and sulci are disproportionate: a DESH pattern.",
                "Normal-pressure hydrocephalus; alternatives atrophy, small-vessel disease.",
            ),
            "perceptual": _v(
                False, "perceptual",
                "The ventricles are within normal limits for age; there is mild periventricular "
                "FLAIR signal.",
                "Periventricular changes in an older man are most often small-vessel disease.",
                "Small-vessel disease; alternatives Alzheimer's, Parkinson's disease.",
            ),
            "reasoning": _v(
                False, "reasoning",
                "Enlarged lateral and third ventricles with tight high-convexity sulci.",
                "Large ventricles in an older adult mean brain volume loss, so this is atrophy.",
                "Neurodegenerative atrophy; alternatives NPH, vascular dementia.",
            ),
            "knowledge": _v(
                False, "knowledge",
                "Enlarged ventricles disproportionate to the sulci.",
                "NPH is defined by a raised opening pressure above 25 cmH2O with papilloedema.",
                "Without papilloedema NPH is excluded; communicating hydrocephalus from "
                "another cause.",
            ),
            "grounding": _v(
                True, "grounding",
                "Asymmetric enlargement of the left lateral ventricle with 4 mm of midline shift.",
                "Ventriculomegaly disproportionate to the sulci suggests NPH.",
                "Normal-pressure hydrocephalus.",
            ),
            "hallucination": _v(
                False, "hallucination",
                "A mass in the posterior fossa compresses the fourth ventricle, causing "
                "upstream ventricular enlargement.",
                "This is obstructive hydrocephalus.",
                "Posterior fossa tumour with obstructive hydrocephalus.",
            ),
        },
    ),
)

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
