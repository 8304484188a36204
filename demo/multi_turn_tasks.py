"""The demo's multi-turn tasks (level 3: information revealed stage by stage) and their answer
variants (synthetic)."""

from __future__ import annotations

from demo.content_types import DemoTask
from demo.content_types import variant as _v

MULTI_TURN: tuple[DemoTask, ...] = (
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
)
