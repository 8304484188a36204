"""DICOM attributes that identify a person or a visit (after the basic application-level
confidentiality profile of DICOM PS3.15 Annex E, table E.1-1).

The DICOM import stores no header value at all (the volumes are written text-free, sequence
names come from the sequence map, the case record from the case info); this list only decides
which attributes the import summary reports as present and dropped.
"""

from typing import Any

IDENTIFYING = (
    "PatientName", "PatientID", "IssuerOfPatientID", "OtherPatientIDs", "OtherPatientNames",
    "OtherPatientIDsSequence", "PatientBirthDate", "PatientBirthTime", "PatientBirthName",
    "PatientMotherBirthName", "PatientAge", "PatientSex", "PatientSize", "PatientWeight",
    "PatientAddress", "PatientTelephoneNumbers", "MilitaryRank", "BranchOfService",
    "EthnicGroup", "Occupation", "PatientReligiousPreference", "PatientComments",
    "AdditionalPatientHistory", "MedicalRecordLocator", "PatientInsurancePlanCodeSequence",
    "ResponsiblePerson", "ResponsibleOrganization", "PregnancyStatus", "LastMenstrualDate",
    "AccessionNumber", "StudyID", "StudyInstanceUID", "SeriesInstanceUID", "SOPInstanceUID",
    "MediaStorageSOPInstanceUID", "FrameOfReferenceUID", "SynchronizationFrameOfReferenceUID",
    "IrradiationEventUID", "ReferencedSOPInstanceUID", "ReferencedImageSequence",
    "SourceImageSequence", "RequestAttributesSequence", "InstanceCreatorUID",
    "StudyDate", "SeriesDate", "AcquisitionDate", "ContentDate", "InstanceCreationDate",
    "StudyTime", "SeriesTime", "AcquisitionTime", "ContentTime", "InstanceCreationTime",
    "AcquisitionDateTime", "InstitutionName", "InstitutionAddress",
    "InstitutionalDepartmentName", "InstitutionCodeSequence", "ReferringPhysicianName",
    "ReferringPhysicianAddress", "ReferringPhysicianTelephoneNumbers",
    "PhysiciansOfRecord", "PerformingPhysicianName", "NameOfPhysiciansReadingStudy",
    "OperatorsName", "RequestingPhysician", "ScheduledPerformingPhysicianName",
    "StationName", "DeviceSerialNumber", "DeviceUID", "PlateID", "DetectorID",
    "StudyDescription", "SeriesDescription", "ProtocolName", "ImageComments",
    "DerivationDescription", "PerformedProcedureStepID", "PerformedProcedureStepDescription",
    "PerformedProcedureStepStartDate", "PerformedProcedureStepStartTime",
    "RequestedProcedureDescription", "RequestedProcedureID", "ScheduledProcedureStepID",
    "AdmissionID", "AdmittingDiagnosesDescription", "CurrentPatientLocation",
    "DataSetTrailingPadding", "TextString", "TextComments", "VerifyingObserverName",
    "ContentSequence", "PersonName", "OriginalAttributesSequence",
)


def present(ds: Any) -> set[str]:
    """The identifying attributes `ds` (a pydicom dataset) holds with a value."""
    out = set()
    for key in IDENTIFYING:
        value = getattr(ds, key, None) if key in ds else None
        if value not in (None, "", []):
            out.add(key)
    meta = getattr(ds, "file_meta", None)
    if meta is not None and "MediaStorageSOPInstanceUID" in meta:
        out.add("MediaStorageSOPInstanceUID")
    return out
