"""The GRRAS checklist (Guidelines for Reporting Reliability and Agreement Studies, Kottner
et al. 2011, J Clin Epidemiol 64:96-106): its 15 items, and for each whether a calibration
report states it and where, or that the study's paper has to (the tool does not record it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GrrasItem:
    number: int
    item: str  # the guideline's item, shortened
    reported: str  # "yes", "partly" or "no: state it in the paper"
    where: str  # where the report (or the study) states it


ITEMS = (
    GrrasItem(1, "title or abstract: reliability or agreement was investigated", "yes",
              "the report's title (calibration report, grader config, part)"),
    GrrasItem(2, "the measurement device (the grader) described", "yes",
              "Protocol and statistics (grader config id); the config's model, prompt version, "
              "rubric and temperature: nmb grader show / the config table"),
    GrrasItem(3, "the subject population (the items)", "yes",
              "the header (items, cases) and Breakdowns by family, level and source"),
    GrrasItem(4, "the rater population (the experts)", "partly",
              "the number of experts in the header; who they are: state it in the paper"),
    GrrasItem(5, "what is known, and the rationale", "no: state it in the paper", "-"),
    GrrasItem(6, "how the sample size was chosen: raters, subjects, replicates", "yes",
              "the protocol's terms (held-out cases against the planner's, nmb protocol plan)"),
    GrrasItem(7, "the sampling method", "yes",
              "the calibration subset's draw (seed, dev/held-out split, sha256) in the protocol"),
    GrrasItem(8, "the rating process (blinding, information available)", "yes",
              "docs/calibration.md: experts score blinded on /score, with the case's record and "
              "images and the rubric, never the model, other raters or the grader"),
    GrrasItem(9, "whether ratings were made independently", "yes",
              "blinding: an expert never sees another rater's or the grader's score"),
    GrrasItem(10, "the statistical analysis", "yes",
              "Protocol and statistics, the clustering line, docs/agreement.md"),
    GrrasItem(11, "the actual number of raters, subjects and replicates", "yes",
              "the header (items, experts, cases), the ICC items line (dropped listwise)"),
    GrrasItem(12, "sample characteristics of raters and subjects", "partly",
              "subjects: Breakdowns; raters' training and experience: state it in the paper"),
    GrrasItem(13, "estimates with their statistical uncertainty", "yes",
              "the gate table and the statistics tables, each with its case-clustered "
              "interval; the Alt-Test's sensitivity to epsilon"),
    GrrasItem(14, "the practical relevance of the results", "partly",
              "the gate's thresholds and verdict; the discussion: state it in the paper"),
    GrrasItem(15, "detailed results", "yes",
              "report.json, nmb export agreement (every score), nmb calibrate --check"),
)

HEADER = ["GRRAS item", "", "reported", "where"]


def rows() -> list[list[object]]:
    return [[i.number, i.item, i.reported, i.where] for i in ITEMS]
