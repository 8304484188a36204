"""The demo's single-turn tasks (levels 1 and 2) and their answer variants (synthetic)."""

from __future__ import annotations

from demo.content_types import DemoTask
from demo.content_types import variant as _v

SINGLE_TURN: tuple[DemoTask, ...] = (
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
