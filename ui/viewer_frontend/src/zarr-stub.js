// NIfTI only: zarr (and its 1.3 MB of codecs) is left out of the bundle.
const unsupported = () => { throw new Error("zarr images are not supported in this build"); };
export const FetchStore = unsupported, get = unsupported, open = unsupported, root = unsupported,
  slice = unsupported;
