// The case viewer: every series of a case as a NiiVue volume, one crosshair linked in world (mm)
// coordinates. A Streamlit (v1) component: it receives only {series: [{label, url}], masks,
// height}, the page's opaque key of the item shown {item} (echoed in every value sent back), the
// measuring tools the study offers {tools: ["ruler", "roi"]}, where it opens {start: {plane, mm,
// layout?, source}} (ui.volume_viewer), the key slices {keys: [{label, plane, mm}]}, and
// optionally {fit: "bottom"}, {offerView: true} (a "Use this view" button) and {prefetch: [url]}
// (the next item's volumes, fetched into this frame once this case is drawn); volumes are
// fetched by URL, so a rerun of the page sends nothing but these few strings. One frame serves
// every item of a page. Build: `npm ci && npm run build` in ui/viewer_frontend.
//
// Each tile has a bar above the image (the series' name, slice k of n, W/L and, for CT, the value
// in HU at the crosshair) and, on the image, the four orientation letters and a scale bar in mm:
// the bar is outside the image, so no letter can cover a label.
import { DRAG_MODE, MULTIPLANAR_TYPE, Niivue, NVImage, SHOW_RENDER, SLICE_TYPE } from "@niivue/niivue";

const PLANES = {
  axial: SLICE_TYPE.AXIAL,
  coronal: SLICE_TYPE.CORONAL,
  sagittal: SLICE_TYPE.SAGITTAL,
  multiplanar: SLICE_TYPE.MULTIPLANAR,
};
const LEFT_DRAG = { crosshair: DRAG_MODE.crosshair, window: DRAG_MODE.windowing, pan: DRAG_MODE.pan, ruler: DRAG_MODE.measurement, roi: DRAG_MODE.callbackOnly };
const TOOLS = ["ruler", "roi"]; // the measuring tools a study may turn off (args.tools)
const NORMAL_OF_VIEW = [2, 1, 0]; // NiiVue's axCorSag (axial, coronal, sagittal) -> RAS axis
const NORMAL = { sagittal: 0, coronal: 1, axial: 2 };
const LAYOUTS = { "1x1": [1, 1], "1x2": [1, 2], "2x2": [2, 2] };
const SCALE_MM = [1, 2, 5, 10, 20, 50, 100];
const STEP_KEYS = { ArrowUp: 1, ArrowRight: 1, PageUp: 1, ArrowDown: -1, ArrowLeft: -1, PageDown: -1 };
const GREEN = [0.25, 0.9, 0.35, 0.9];
const MASK_OPACITY = 0.45;

const state = {
  key: null, // the series and masks shown, as JSON: a rerun with the same key changes nothing
  item: null, // the page's opaque key of the item shown, echoed in every value sent back
  reported: null, // the last value sent back (sent again, for the new item, when only the item changes)
  generation: 0, // one per case built: a load still running for an earlier case stops
  tiles: [], // {label, nv, el, caption, ready, failed, pointer}
  mm: null, // the shared crosshair, world (scanner) mm
  plane: "axial",
  leftDrag: "crosshair",
  radiological: true,
  masks: true,
  solo: null,
  hover: null,
  firstDrawAt: null,
  height: 600,
  fit: null, // "bottom": fill the window from where the viewer stands
  keys: [], // key slices: {label, plane, mm}
  preset: "loaded",
  drag: null, // the window/level drag in progress: {t, x0, y0, min, max, x, y, frame}
  dragFrames: 0, // redraws of drags (what the benchmark reads)
  layoutChoice: null, // "1x1" | "1x2" | "2x2"; null: as many tiles as series
  offerView: false,
  viewClicks: 0,
  measured: [], // the ruler's lengths (mm), newest last
  roi: null, // the last circular ROI: {label, mean, sd, n, areaMM2, unit}
  tools: TOOLS, // the measuring tools this study offers
  prefetch: [],
  prefetched: null, // how long fetching the next item's volumes took (ms)
  ahead: new Map(), // url -> Promise<ArrayBuffer>: the next item's volumes, fetched ahead
};
// Window/level presets. CT (a series whose minimum is at least as low as air in Hounsfield
// units) gets the usual HU windows [level, width]; MR has no absolute unit, so there the same
// names are windows relative to the series' own robust (2-98 %) range r: [level, width] in r.
const AIR_HU = -500;
const PRESETS = {
  loaded: { label: "As loaded", ct: null, mr: null },
  brain: { label: "Brain", ct: [40, 80], mr: [0.5, 1.0] },
  stroke: { label: "Stroke", ct: [32, 8], mr: [0.62, 0.45] },
  subdural: { label: "Subdural", ct: [75, 215], mr: [0.45, 1.7] },
};

// ----- Streamlit component protocol (v1): ready, render, value, frame height ---------------
function post(type, extra) {
  window.parent.postMessage({ isStreamlitMessage: true, type, ...extra }, "*");
}
/** Send `value` to the page, for the item shown (the page ignores a value of another item: one
 * frame serves every item, so its last value outlives the item it was about). */
function setValue(value) {
  state.reported = value;
  post("streamlit:setComponentValue", { value: { ...value, item: state.item }, dataType: "json" });
}
window.addEventListener("message", (event) => {
  if (event.data && event.data.type === "streamlit:render") render(event.data.args);
});

function render(args) {
  state.height = args.height || 600;
  state.fit = args.fit || null;
  fitHeight();
  const key = JSON.stringify([args.series, args.masks || [], args.start || null]);
  const item = args.item ?? null;
  if (key === state.key) {
    // a rerun of the page (the volumes are already here), or another item of the same case:
    // the view stays as the reader left it, and what was reported holds for the new item too
    if (item !== state.item) {
      state.item = item;
      state.prefetch = args.prefetch || [];
      if (state.reported && !state.reported.view) setValue(state.reported);
    }
    return;
  }
  state.key = key;
  state.item = item;
  state.reported = null;
  state.keys = args.keys || [];
  state.start = args.start || null;
  state.offerView = !!args.offerView;
  state.prefetch = args.prefetch || [];
  state.tools = Array.isArray(args.tools) ? TOOLS.filter((x) => args.tools.includes(x)) : TOOLS;
  if (TOOLS.includes(state.leftDrag) && !state.tools.includes(state.leftDrag)) state.leftDrag = "crosshair";
  if (state.start && PLANES[state.start.plane] !== undefined) state.plane = state.start.plane;
  state.layoutChoice = state.start && LAYOUTS[state.start.layout] ? state.start.layout : null;
  if (!webgl2Available()) {
    message("This browser has no WebGL2: the page shows the images instead.");
    setValue({ webgl2: false });
    return;
  }
  build(args.series || [], args.masks || []);
}

/** Fill the browser window's height (less the page header) when the page lets us measure it;
 * with `fit: "bottom"`, from where the viewer stands (the page scrolled to its top) down to the
 * window's bottom edge, so the whole viewer is in view without scrolling; where the page
 * stacks the images above the text (a narrow window: the viewer as wide as the page), the
 * page scrolls anyway, so the window's height below the app's top bar. */
function fitHeight() {
  let height = state.height;
  try {
    let top = 84;
    const stacked = window.frameElement.getBoundingClientRect().width > 0.8 * window.parent.innerWidth;
    if (state.fit === "bottom" && !stacked) {
      const scroller = window.parent.document.querySelector('[data-testid="stMain"]');
      const scrolled = scroller ? scroller.scrollTop : 0;
      if (scrolled === 0 || state.naturalTop === undefined) {
        state.naturalTop = window.frameElement.getBoundingClientRect().top + scrolled;
      }
      top = state.naturalTop + 8;
    }
    height = Math.max(320, Math.min(1400, window.parent.innerHeight - top));
  } catch {
    /* another origin: keep the height asked for */
  }
  if (height !== state.frameHeight) {
    state.frameHeight = height;
    document.getElementById("viewer").style.height = `${height}px`;
    post("streamlit:setFrameHeight", { height });
    if (state.tiles.length) layout();
  }
}
try {
  window.parent.addEventListener("resize", fitHeight);
} catch {
  /* another origin */
}

function webgl2Available() {
  try {
    return !!document.createElement("canvas").getContext("webgl2");
  } catch {
    return false;
  }
}

function message(text) {
  const grid = document.getElementById("grid");
  grid.replaceChildren();
  const p = document.createElement("p");
  p.className = "message";
  p.textContent = text;
  grid.append(p);
}

// ----- tiles: one NiiVue instance (one canvas) per series ----------------------------------
// One frame serves every item of a page (ui.case_panel keeps the component's key), so a new
// case reuses the NiiVue instances of the last one: attaching a new instance compiles its
// shaders, the slowest step of showing a case with software WebGL (docs/viewer.md, "Figures").
function build(series, masks) {
  const generation = ++state.generation;
  const spare = state.tiles.filter((t) => t.nv && !t.failed);
  for (const t of state.tiles) if (!spare.includes(t)) dispose(t);
  state.tiles = [];
  state.mm = state.start ? state.start.mm.slice() : null;
  state.solo = null;
  state.preset = "loaded"; // a new case opens as loaded; the drag mode and convention stay
  state.measured = [];
  state.roi = null;
  state.firstDrawAt = null;
  state.prefetched = null;
  const grid = document.getElementById("grid");
  grid.replaceChildren();
  if (!series.length) {
    for (const t of spare) dispose(t);
    message("This case has no image series.");
    return;
  }
  state.tiles = series.map((s) => tile(s, masks, spare.shift()));
  for (const t of spare) dispose(t);
  layout();
  renderToolbar(masks.length > 0);
  // Every download starts now; the tiles then start one after another, so that the first
  // series is drawn as soon as possible (starting a tile compiles NiiVue's shaders).
  const downloads = state.tiles.map((t) => state.ahead.get(t.url) || fetchVolume(t.url));
  state.ahead = new Map(); // what the last case fetched ahead and this one does not show
  for (const d of downloads) d.catch(() => {}); // a failure is reported by its tile
  (async () => {
    for (const [i, t] of state.tiles.entries()) {
      // The page shares this thread (and, with software WebGL, the GPU process): starting a
      // new NiiVue instance (compiling its programs) before the page has drawn itself made the
      // first volume later, not sooner (docs/viewer.md, "Figures"), so such a series waits
      // for an idle page; a reused instance only parses and uploads its volume.
      if (!t.nv) await idle(1000);
      if (generation !== state.generation) return; // another case came meanwhile
      await load(t, downloads[i], generation);
    }
    if (generation !== state.generation) return;
    report();
    prefetchNext(generation);
  })();
}

/** Fetch the next item's volumes, one after another once this case is drawn, and keep them in
 * this frame (which serves the page's next item too), so that after Submit they are at hand
 * without a request: the volume route answers "no-cache", so a copy in the browser's HTTP
 * cache would still wait for the server, busy then with the page's rerun. */
async function prefetchNext(generation) {
  const urls = state.prefetch.filter((u) => !state.tiles.some((t) => t.url === u));
  const started = performance.now();
  for (const url of urls) {
    await idle(2000);
    if (generation !== state.generation) return;
    const buffer = fetchVolume(url, "low");
    state.ahead.set(url, buffer);
    try {
      await buffer;
    } catch {
      state.ahead.delete(url); // the next item loads it itself, and says what failed
    }
  }
  if (urls.length) state.prefetched = performance.now() - started;
}

/** A tile for series `s`: `old`'s (its canvas and NiiVue instance, emptied) where given. */
function tile(s, masks, old) {
  // A mask names the series it was drawn on, or none: then it is overlaid on every series
  // (NiiVue resamples it through its own affine into the series' grid: world space).
  const mine = masks.filter((m) => !m.series || m.series === s.label);
  if (old) {
    for (const v of old.nv.volumes.slice().reverse()) old.nv.removeVolume(v);
    old.nv.setPan2Dxyzmm([0, 0, 0, 1]);
    Object.assign(old, { label: s.label, url: s.url, masks: mine, ready: false, failed: null,
      masksLoaded: false, pointer: null, timings: null });
    old.el.classList.remove("failed");
    old.el.hidden = false;
    old.caption.textContent = `${s.label} · loading…`;
    old.info.textContent = "";
    for (const l of old.letters) l.textContent = "";
    old.scale.hidden = true;
    old.circle.hidden = true;
    old.canvas.setAttribute("aria-label", `${s.label} series: arrow keys step the slices`);
    document.getElementById("grid").append(old.el);
    return old;
  }
  const el = document.createElement("div");
  el.className = "tile";
  const bar = document.createElement("div");
  bar.className = "bar";
  const caption = document.createElement("button");
  caption.className = "caption";
  caption.type = "button";
  caption.title = "Show this series alone (click again for all)";
  caption.textContent = `${s.label} · loading…`;
  const info = document.createElement("span");
  info.className = "info";
  bar.append(caption, info);
  const image = document.createElement("div");
  image.className = "image";
  const canvas = document.createElement("canvas");
  canvas.tabIndex = 0; // reachable with Tab; arrow keys then step its slices
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", `${s.label} series: arrow keys step the slices`);
  const letters = ["top", "right", "bottom", "left"].map((side) => {
    const l = document.createElement("span");
    l.className = `ori ${side}`;
    l.setAttribute("aria-hidden", "true");
    return l;
  });
  const scale = document.createElement("div");
  scale.className = "scale";
  scale.innerHTML = '<span class="line"></span><span class="mm"></span>';
  const circle = document.createElement("div");
  circle.className = "roi";
  circle.hidden = true;
  image.append(canvas, ...letters, scale, circle);
  el.append(bar, image);
  document.getElementById("grid").append(el);
  const t = { label: s.label, url: s.url, masks: mine, el, canvas, caption, info, letters, scale, circle, nv: null, ready: false, failed: null };
  caption.addEventListener("click", () => {
    state.solo = state.solo === t ? null : t;
    layout();
  });
  canvas.addEventListener("pointermove", (e) => {
    state.hover = t;
    t.pointer = [e.offsetX, e.offsetY];
    if (t.roiFrom && e.buttons & 1) drawCircle(t, t.roiFrom, t.pointer);
  });
  canvas.addEventListener("pointerdown", (e) => {
    hideCircles();
    t.roiFrom = state.leftDrag === "roi" && e.button === 0 && !e.shiftKey && !e.ctrlKey ? [e.offsetX, e.offsetY] : null;
  });
  canvas.addEventListener("pointerup", () => t.ready && link(t));
  canvas.addEventListener("mousedown", (e) => startWindowDrag(t, e), { capture: true });
  canvas.addEventListener("mousemove", (e) => state.drag && e.stopImmediatePropagation(), { capture: true });
  canvas.addEventListener("wheel", (e) => zoomWheel(t, e), { capture: true, passive: false });
  canvas.addEventListener("dblclick", () => resetView());
  return t;
}

/** Resolves when the browser's main thread is idle (or after `timeout` ms at most). */
function idle(timeout) {
  return new Promise((done) =>
    window.requestIdleCallback ? requestIdleCallback(() => done(), { timeout }) : setTimeout(done, 50),
  );
}

async function fetchVolume(url, priority = "auto") {
  const response = await fetch(url, { priority });
  if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);
  return response.arrayBuffer();
}

function niivue() {
  const nv = new Niivue({
    backColor: [0, 0, 0, 1],
    crosshairColor: GREEN,
    crosshairGap: 6,
    isRadiologicalConvention: state.radiological,
    multiplanarShowRender: SHOW_RENDER.NEVER,
    multiplanarLayout: MULTIPLANAR_TYPE.AUTO,
    dragAndDropEnabled: false,
    isResizeCanvas: true,
    show3Dcrosshair: false,
    logLevel: "error",
    loadingText: "loading",
    isOrientationTextVisible: state.plane === "multiplanar", // single planes: our letters
    showAllOrientationMarkers: true,
  });
  nv.nmbSlicesOnly = true; // no 3-D lighting pass (see build.mjs)
  return nv;
}

/** Attach `nv` to `canvas` (this compiles NiiVue's shaders); resolves to {startedAt, attach}. */
async function attach(nv, canvas) {
  const started = performance.now();
  await nv.attachToCanvas(canvas);
  return { startedAt: performance.timeOrigin + started, attach: performance.now() - started };
}

async function load(t, download, generation) {
  try {
    if (t.nv) {
      t.timings = { startedAt: performance.timeOrigin + performance.now(), attach: 0 };
      t.nv.opts.isOrientationTextVisible = state.plane === "multiplanar";
      t.nv.setRadiologicalConvention(state.radiological);
    } else {
      t.nv = niivue();
      t.timings = await attach(t.nv, t.canvas);
    }
    const started = t.timings.startedAt - performance.timeOrigin;
    t.nv.setSliceType(PLANES[state.plane]);
    t.nv.setMouseEventConfig(mouseConfig());
    const buffer = await download;
    t.timings.downloaded = performance.now() - started;
    const image = await NVImage.loadFromUrl({ url: t.url, name: nameOf(t.url), buffer });
    t.timings.parsed = performance.now() - started;
    if (generation !== state.generation) return; // another case came meanwhile
    t.nv.addVolume(image);
    t.timings.load = performance.now() - started; // attach, download wait, parse, upload
    t.ready = true;
    if (state.mm) t.nv.scene.crosshairPos = t.nv.mm2frac(state.mm);
    if (state.preset !== "loaded") applyPreset(t, state.preset);
    t.nv.onLocationChange = () => {
      hideCircles();
      link(t);
    };
    t.nv.onMeasurementCompleted = (m) => measured(t, m);
    t.nv.onDragRelease = (info) => state.leftDrag === "roi" && t.roiFrom && roiMeasured(t, info);
    t.nv.drawScene();
    requestAnimationFrame(() => caption(t)); // the scale bar once NiiVue has laid the slice out
    if (state.firstDrawAt === null) {
      state.firstDrawAt = performance.timeOrigin + performance.now();
      link(t);
    } else {
      caption(t);
    }
  } catch (err) {
    if (generation !== state.generation) return;
    t.failed = String((err && err.message) || err);
    t.caption.textContent = `${t.label}: cannot be shown`;
    t.el.classList.add("failed");
    return;
  }
  for (const m of t.masks) {
    if (generation !== state.generation) return;
    // After the image is drawn. Labels are whole numbers >= 1 on 0: every label is red.
    try {
      const mask = await t.nv.addVolumeFromUrl({ url: m.url, name: nameOf(m.url), colormap: "red",
        opacity: state.masks ? MASK_OPACITY : 0, cal_min: 0.5, cal_max: 1 });
      if (generation !== state.generation) {
        t.nv.removeVolume(mask); // (its tile shows another case now)
        return;
      }
    } catch {
      t.caption.textContent = `${t.caption.textContent} · mask ${m.label} cannot be shown`;
    }
  }
  t.masksLoaded = true;
}

function nameOf(url) {
  return url.split("/").pop().split("?")[0];
}

function dispose(t) {
  try {
    t.nv?.cleanup?.();
    t.nv?.gl?.getExtension("WEBGL_lose_context")?.loseContext();
  } catch {
    /* already gone */
  }
}

// ----- window/level: a drag redrawn at most once per animation frame, presets --------------
// NiiVue rebuilds the volume's texture on every pointer move of its own windowing drag, and
// moves queue up behind it (0.4 s each with three series on software WebGL). This drag is
// ours: the moves only record the pointer; once per animation frame the latest window is
// shown as a CSS filter on the canvas (a linear map of the drawn grey levels, no WebGL work),
// and on release the volume is redrawn once with the exact window. The preview cannot show
// detail the old window had clipped (a widened window shows it on release). Right drag,
// Ctrl+left drag, or left drag in "Window" mode.
function windowing(e) {
  if (e.button === 2) return true;
  return e.button === 0 && !e.shiftKey && (e.ctrlKey || state.leftDrag === "window");
}

function startWindowDrag(t, e) {
  if (!t.ready || !windowing(e)) return;
  e.preventDefault();
  e.stopImmediatePropagation(); // NiiVue does not start its own drag
  const vol = t.nv.volumes[0];
  state.drag = { t, x0: e.clientX, y0: e.clientY, x: e.clientX, y: e.clientY, min: vol.cal_min, max: vol.cal_max, frame: 0 };
  window.addEventListener("mousemove", moveWindowDrag, true);
  window.addEventListener("mouseup", endWindowDrag, true);
}

function moveWindowDrag(e) {
  const d = state.drag;
  if (!d) return;
  d.x = e.clientX;
  d.y = e.clientY;
  if (!d.frame) d.frame = requestAnimationFrame(() => redrawWindow(d));
}

/** The window [min, max] the drag's pointer asks for now. */
function draggedWindow(d) {
  const vol = d.t.nv.volumes[0];
  const range = Math.max(vol.robust_max - vol.robust_min, 1e-6);
  const perPixel = range / 300; // 300 px: one robust range
  const width = Math.max(range / 100, d.max - d.min + (d.x - d.x0) * perPixel * 2); // right: wider
  const level = (d.max + d.min) / 2 - (d.y - d.y0) * perPixel; // up: higher level, darker
  return [level - width / 2, level + width / 2];
}

/** The CSS filter that maps grey levels drawn with [a, b] to those of [a2, b2]: g' = s g + o,
 * as contrast(c) then brightness(k), k c = s and k (1 - c) / 2 = o. */
function previewFilter([a, b], [a2, b2]) {
  const s = (b - a) / (b2 - a2);
  const o = (a - a2) / (b2 - a2);
  const k = Math.max(0.01, 2 * o + s);
  return `contrast(${s / k}) brightness(${k})`;
}

function redrawWindow(d) {
  d.frame = 0;
  d.t.canvas.style.filter = previewFilter([d.min, d.max], draggedWindow(d));
  state.dragFrames++;
}

function endWindowDrag() {
  const d = state.drag;
  window.removeEventListener("mousemove", moveWindowDrag, true);
  window.removeEventListener("mouseup", endWindowDrag, true);
  state.drag = null;
  if (!d) return;
  if (d.frame) cancelAnimationFrame(d.frame);
  const started = performance.now();
  const vol = d.t.nv.volumes[0];
  [vol.cal_min, vol.cal_max] = draggedWindow(d);
  d.t.nv.refreshLayers(vol, 0);
  d.t.nv.drawScene();
  d.t.canvas.style.filter = "";
  caption(d.t);
  state.dragSettle = performance.now() - started; // the exact redraw on release (benchmark)
}

function applyPreset(t, name) {
  const vol = t.nv.volumes[0];
  const p = PRESETS[name];
  let win = null; // [level, width]
  if (p.ct && vol.global_min <= AIR_HU) win = p.ct;
  else if (p.mr) {
    const r = vol.robust_max - vol.robust_min;
    win = [vol.robust_min + p.mr[0] * r, p.mr[1] * r];
  }
  vol.cal_min = win ? win[0] - win[1] / 2 : vol.robust_min;
  vol.cal_max = win ? win[0] + win[1] / 2 : vol.robust_max;
  t.nv.updateGLVolume();
  caption(t);
}

function mouseConfig() {
  return {
    leftButton: { primary: LEFT_DRAG[state.leftDrag], withShift: DRAG_MODE.pan, withCtrl: DRAG_MODE.windowing },
    rightButton: DRAG_MODE.windowing,
    centerButton: DRAG_MODE.pan,
  };
}

// ----- one crosshair and one view, linked in world coordinates -----------------------------
/** Move every other series to `source`'s crosshair (in mm) and zoom/pan. */
function link(source) {
  if (state.linking || !source.ready) return;
  state.linking = true;
  const mm = source.nv.frac2mm(source.nv.scene.crosshairPos);
  state.mm = [mm[0], mm[1], mm[2]];
  for (const t of state.tiles) {
    if (t !== source && t.ready) {
      t.nv.scene.crosshairPos = t.nv.mm2frac(state.mm);
      t.nv.scene.pan2Dxyzmm = source.nv.scene.pan2Dxyzmm.slice();
      t.nv.drawScene();
    }
    caption(t);
  }
  document.getElementById("where").textContent =
    `Crosshair (scanner mm): x ${state.mm[0].toFixed(1)}, y ${state.mm[1].toFixed(1)}, z ${state.mm[2].toFixed(1)}`;
  state.linking = false;
}

/** Where the crosshair falls in a series' own grid (RAS voxel indices) and its value there. */
function position(t) {
  const vol = t.nv.volumes[0];
  const vox = Array.from(vol.mm2vox(state.mm));
  const dims = [vol.dimsRAS[1], vol.dimsRAS[2], vol.dimsRAS[3]];
  const inside = vox.every((v, i) => v >= 0 && v < dims[i]);
  const value = inside ? vol.getValue(vox[0], vox[1], vox[2], vol.frame4D) : null;
  const own = t.nv.frac2mm(t.nv.scene.crosshairPos);
  return { vox, dims, inside, value, mm: [own[0], own[1], own[2]] };
}

/** The tile's bar (name; slice k of n; W/L; a CT value in HU) and the letters and scale bar
 * on its image. MR intensities have no unit: no value is shown for them. */
function caption(t) {
  if (!t.ready || !state.mm) return;
  const o = overlay(t);
  t.caption.textContent = t.label;
  const parts = [o.slice ? `${o.slice[0]}/${o.slice[1]}` : state.plane === "multiplanar" ? "" : "outside"];
  parts.push(`W ${fmt(o.wl[0])} L ${fmt(o.wl[1])}`);
  if (o.hu !== null) parts.push(`${fmt(o.hu)} HU`);
  t.info.textContent = parts.filter(Boolean).join(" · ");
  t.info.title = `${o.slice ? `${state.plane} slice ${o.slice[0]} of ${o.slice[1]} · ` : ""}window width ${fmt(o.wl[0])}, level ${fmt(o.wl[1])}`;
  const [top, right, bottom, left] = o.letters;
  const single = state.plane !== "multiplanar";
  for (const [el, text] of t.letters.map((el, i) => [el, [top, right, bottom, left][i]])) {
    el.textContent = single ? text : "";
  }
  t.scale.hidden = !(single && o.scaleMM);
  if (o.scaleMM) {
    t.scale.querySelector(".line").style.width = `${o.scalePx}px`;
    t.scale.querySelector(".mm").textContent = `${o.scaleMM} mm`;
  }
}

function fmt(v) {
  return Math.abs(v) >= 100 ? String(Math.round(v)) : String(Number(v.toPrecision(3)));
}

/** What the tile's overlay shows: letters [top, right, bottom, left], slice [k, n] (1-based,
 * null outside the series or in 3 planes), [window width, level], the CT value at the
 * crosshair (null for MR), and a scale bar (its mm and CSS px). */
function overlay(t) {
  const vol = t.nv.volumes[0];
  const p = position(t);
  const side = state.radiological ? ["R", "L"] : ["L", "R"];
  const letters = state.plane === "sagittal" ? ["S", "A", "I", "P"]
    : state.plane === "coronal" ? ["S", side[1], "I", side[0]] : ["A", side[1], "P", side[0]];
  const axis = NORMAL[state.plane];
  const slice = axis !== undefined && p.inside ? [p.vox[axis] + 1, p.dims[axis]] : null;
  const wl = [vol.cal_max - vol.cal_min, (vol.cal_max + vol.cal_min) / 2];
  const hu = vol.global_min <= AIR_HU && p.inside ? p.value : null;
  const [scaleMM, scalePx] = scaleBar(t);
  return { letters, slice, wl, hu, scaleMM, scalePx };
}

/** A round length (mm) drawn at most a quarter of the image wide, from NiiVue's own mapping of
 * the slice on screen (its field of view in mm over its width in device pixels). */
function scaleBar(t) {
  // (the field of view is negative along an axis drawn flipped: radiological left-right)
  const shown = (t.nv.screenSlices || []).find((sl) => sl.axCorSag <= 2 && sl.fovMM && Math.abs(sl.fovMM[0]) > 0);
  if (!shown) return [null, null];
  const dpr = t.nv.uiData.dpr || window.devicePixelRatio || 1;
  const perMM = shown.leftTopWidthHeight[2] / Math.abs(shown.fovMM[0]) / dpr;
  const room = t.canvas.clientWidth / 4;
  const mm = [...SCALE_MM].reverse().find((m) => m * perMM <= room);
  return mm ? [mm, Math.round(mm * perMM * 10) / 10] : [null, null];
}

/** A length measured with the ruler: kept, shown in the status line. */
function measured(t, m) {
  state.measured.push(m.distance);
  document.getElementById("where").textContent = `${t.label}: length ${m.distance.toFixed(1)} mm`;
}

// ----- the circular ROI: a left drag from the centre out, in "ROI" mode ----------------------
/** Draw the ROI's circle on tile `t`: centre and edge in the canvas' CSS pixels. */
function drawCircle(t, [x0, y0], [x1, y1]) {
  const r = Math.hypot(x1 - x0, y1 - y0);
  Object.assign(t.circle.style, { left: `${x0 - r}px`, top: `${y0 - r}px`, width: `${2 * r}px`, height: `${2 * r}px` });
  t.circle.hidden = false;
}

function hideCircles() {
  for (const t of state.tiles) t.circle.hidden = true;
}

/** The voxels of the slice shown whose centres lie within the dragged circle, on the series'
 * RAS grid (NiiVue's reoriented copy: in-plane distances in mm from its voxel sizes): their
 * mean and sample SD, count and area. Values are the series' own (after its scaling): HU for
 * CT, the map's unit for a quantitative map (ADC), arbitrary units for other MR. */
function roiStats(t, info) {
  const vol = t.nv.volumes[0];
  const axis = NORMAL_OF_VIEW[info.axCorSag];
  if (axis === undefined) return null;
  const c = Array.from(vol.mm2vox(info.mmStart, true));
  const e = Array.from(vol.mm2vox(info.mmEnd, true));
  const dims = [vol.dimsRAS[1], vol.dimsRAS[2], vol.dimsRAS[3]];
  const px = [vol.pixDimsRAS[1], vol.pixDimsRAS[2], vol.pixDimsRAS[3]];
  const [a, b] = [0, 1, 2].filter((x) => x !== axis);
  const r = Math.hypot((e[a] - c[a]) * px[a], (e[b] - c[b]) * px[b]); // mm
  const k = Math.round(c[axis]);
  if (!(r > 0) || k < 0 || k >= dims[axis]) return null;
  let n = 0, sum = 0, sq = 0;
  const vox = [0, 0, 0];
  vox[axis] = k;
  for (let i = Math.max(0, Math.ceil(c[a] - r / px[a])); i <= Math.min(dims[a] - 1, Math.floor(c[a] + r / px[a])); i++) {
    for (let j = Math.max(0, Math.ceil(c[b] - r / px[b])); j <= Math.min(dims[b] - 1, Math.floor(c[b] + r / px[b])); j++) {
      if (((i - c[a]) * px[a]) ** 2 + ((j - c[b]) * px[b]) ** 2 > r * r) continue;
      vox[a] = i;
      vox[b] = j;
      const v = vol.getValue(vox[0], vox[1], vox[2], vol.frame4D);
      n++;
      sum += v;
      sq += v * v;
    }
  }
  if (!n) return null;
  const mean = sum / n;
  const sd = n > 1 ? Math.sqrt(Math.max(0, (sq - n * mean * mean) / (n - 1))) : 0;
  const centreMM = [info.mmStart[0], info.mmStart[1], info.mmStart[2]];
  return { label: t.label, mean, sd, n, areaMM2: n * px[a] * px[b], radiusMM: r, centreMM, unit: vol.global_min <= AIR_HU ? "HU" : "" };
}

function roiMeasured(t, info) {
  t.roiFrom = null;
  state.roi = roiStats(t, info);
  const where = document.getElementById("where");
  if (!state.roi) {
    where.textContent = `${t.label}: draw the circle on the image, from its centre out`;
    return;
  }
  const o = state.roi;
  const unit = o.unit ? ` ${o.unit}` : "";
  where.textContent = `${t.label} ROI: mean ${fmt(o.mean)}${unit} (SD ${fmt(o.sd)}), ${o.n} voxels, ${fmt(o.areaMM2)} mm²`;
}

function recaption() {
  for (const t of state.tiles) caption(t);
}

function zoomWheel(t, e) {
  if (!t.ready || !(e.ctrlKey || e.metaKey || state.leftDrag === "pan")) return; // plain wheel: slices
  e.preventDefault();
  e.stopImmediatePropagation();
  const pan = t.nv.scene.pan2Dxyzmm;
  pan[3] = Math.min(12, Math.max(0.5, pan[3] * (e.deltaY < 0 ? 1.15 : 1 / 1.15)));
  t.nv.drawScene();
  link(t); // (and the scale bar, for the new zoom)
}

function resetView() {
  for (const t of state.tiles) {
    if (!t.ready) continue;
    t.nv.setPan2Dxyzmm([0, 0, 0, 1]);
    for (const vol of t.nv.volumes.slice(0, 1)) {
      vol.cal_min = vol.robust_min;
      vol.cal_max = vol.robust_max;
    }
    t.nv.updateGLVolume();
  }
  state.preset = "loaded";
  const select = document.getElementById("preset");
  if (select) select.value = "loaded";
  requestAnimationFrame(recaption);
}

/** Show the key slice `k`: its plane, the crosshair at its point, in every series. */
function goToKey(k) {
  const key = state.keys[k];
  if (!key) return;
  state.mm = key.mm.slice();
  setPlane(key.plane);
  for (const t of state.tiles) {
    if (!t.ready) continue;
    t.nv.scene.crosshairPos = t.nv.mm2frac(state.mm);
    t.nv.drawScene();
  }
  const first = state.tiles.find((t) => t.ready);
  if (first) link(first);
}

function setPlane(p) {
  state.plane = p;
  for (const t of state.tiles) {
    if (!t.ready) continue;
    t.nv.opts.isOrientationTextVisible = p === "multiplanar"; // single planes: our letters
    t.nv.setSliceType(PLANES[p]);
  }
  for (const b of document.querySelectorAll('[aria-label="Plane"] button')) {
    b.setAttribute("aria-pressed", String(b.dataset.value === p));
  }
  layout();
}

window.addEventListener(
  "keydown",
  (e) => {
    const step = STEP_KEYS[e.key];
    // the image with the keyboard focus (Tab), else the one under the pointer, else the first
    const focused = state.tiles.find((x) => x.ready && x.canvas === document.activeElement);
    const t = focused || (state.hover && state.hover.ready ? state.hover : state.tiles.find((x) => x.ready));
    if (!step) {
      forwardKey(e);
      return;
    }
    if (!t) return;
    e.preventDefault();
    e.stopPropagation(); // NiiVue's own arrows change 4-D frames
    const rect = t.canvas.getBoundingClientRect();
    const [x, y] = t.pointer || [rect.width / 2, rect.height / 2];
    t.nv.sliceScroll2D(step, x, y);
  },
  true,
);

/** A key the viewer does not use goes on to the page (its rubric keys: ui/score/score_keys.py). */
function forwardKey(e) {
  if (e.key.length !== 1 || e.ctrlKey || e.metaKey || e.altKey) return;
  try {
    window.parent.document.dispatchEvent(new KeyboardEvent("keydown", { key: e.key, code: e.code, bubbles: true }));
  } catch {
    /* another origin */
  }
}

// ----- layout and toolbar ------------------------------------------------------------------
function layout() {
  const chosen = LAYOUTS[state.layoutChoice];
  let shown = state.solo ? [state.solo] : state.tiles;
  if (chosen && !state.solo) shown = state.tiles.slice(0, chosen[0] * chosen[1]);
  const n = shown.length;
  const grid = document.getElementById("grid");
  // Fitted to a short window (under two rows of 400 px), the tiles share one row, each as tall
  // as the viewer; otherwise a grid (or the layout chosen: rows x columns).
  const oneRow = state.fit === "bottom" && state.plane !== "multiplanar" && grid.clientHeight < 2 * 400 + 4;
  const columns = chosen && !state.solo ? Math.min(chosen[1], Math.max(n, 1)) : oneRow ? Math.max(n, 1)
    : state.plane === "multiplanar" ? (n <= 2 ? 1 : 2) : n <= 1 ? 1 : n <= 4 ? 2 : 3;
  grid.style.gridTemplateColumns = `repeat(${columns}, minmax(0, 1fr))`;
  grid.style.gridTemplateRows = `repeat(${Math.ceil(n / columns)}, minmax(0, 1fr))`;
  for (const t of state.tiles) t.el.hidden = !shown.includes(t);
  const hidden = state.tiles.length - n;
  document.getElementById("hidden-note").textContent = hidden > 0 ? `${hidden} more series: Layout` : "";
  requestAnimationFrame(() => {
    for (const t of shown) if (t.ready) t.nv.resizeListener();
    requestAnimationFrame(recaption); // the scale bar follows the new size
  });
}

function renderToolbar(hasMasks) {
  const bar = document.getElementById("toolbar");
  bar.replaceChildren();
  const group = (label, options, current, onPick) => {
    const g = document.createElement("div");
    g.className = "group";
    g.setAttribute("role", "radiogroup");
    g.setAttribute("aria-label", label);
    for (const [value, text, tip] of options) {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = text;
      b.title = tip;
      b.dataset.value = value;
      b.setAttribute("aria-pressed", String(value === current()));
      b.addEventListener("click", () => {
        onPick(value);
        for (const other of g.children) other.setAttribute("aria-pressed", String(other === b));
      });
      g.append(b);
    }
    bar.append(g);
  };
  group(
    "Plane",
    [
      ["axial", "Axial", "Axial slices"],
      ["coronal", "Coronal", "Coronal slices"],
      ["sagittal", "Sagittal", "Sagittal slices"],
      ["multiplanar", "3 planes", "Axial, coronal and sagittal at once"],
    ],
    () => state.plane,
    setPlane,
  );
  group(
    "Left drag",
    [
      ["crosshair", "Crosshair", "Left drag moves the crosshair (right drag: window/level)"],
      ["window", "Window", "Left drag changes window (left-right) and level (up-down)"],
      ["pan", "Pan/zoom", "Left drag pans, the wheel zooms"],
      ["ruler", "Ruler", "Left drag measures a length in mm (on the slice shown)"],
      ["roi", "ROI", "Left drag from a centre out draws a circle: the mean of the voxels inside"],
    ].filter(([mode]) => !TOOLS.includes(mode) || state.tools.includes(mode)),
    () => state.leftDrag,
    (m) => {
      state.leftDrag = m;
      for (const t of state.tiles) if (t.ready) t.nv.setMouseEventConfig(mouseConfig());
    },
  );
  group(
    "Layout",
    [
      ["auto", "All", "Every series, as many tiles as series"],
      ["1x1", "1×1", "One series (click a series' name for another)"],
      ["1x2", "1×2", "Two series side by side"],
      ["2x2", "2×2", "Four series"],
    ],
    () => state.layoutChoice || "auto",
    (v) => {
      state.layoutChoice = v === "auto" ? null : v;
      state.solo = null;
      layout();
    },
  );
  const toggle = (text, tip, value, onChange) => {
    const label = document.createElement("label");
    label.title = tip;
    const box = document.createElement("input");
    box.type = "checkbox";
    box.checked = value;
    box.addEventListener("change", () => onChange(box.checked));
    label.append(box, ` ${text}`);
    bar.append(label);
  };
  toggle("Radiological", "On: patient's right on screen left. Off: neurological.", state.radiological, (on) => {
    state.radiological = on;
    for (const t of state.tiles) if (t.ready) t.nv.setRadiologicalConvention(on);
  });
  if (hasMasks) {
    toggle("Masks", "Show the lesion masks as a red overlay", state.masks, (on) => {
      state.masks = on;
      for (const t of state.tiles) {
        if (!t.ready) continue;
        for (let i = 1; i < t.nv.volumes.length; i++) t.nv.setOpacity(i, on ? MASK_OPACITY : 0);
      }
    });
  }
  const presets = document.createElement("select");
  presets.id = "preset";
  presets.title = "Window/level preset, every series (CT: HU windows; MR: relative to each series' range)";
  presets.setAttribute("aria-label", "Window preset");
  for (const [value, p] of Object.entries(PRESETS)) presets.append(new Option(p.label, value));
  presets.value = state.preset;
  presets.addEventListener("change", () => {
    state.preset = presets.value;
    for (const t of state.tiles) if (t.ready) applyPreset(t, state.preset);
  });
  bar.append(presets);
  if (state.keys.length) {
    const keys = document.createElement("div");
    keys.className = "group";
    keys.setAttribute("aria-label", "Key slices");
    keys.title = "Key slices of this case";
    for (const [k, key] of state.keys.entries()) {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = `Key ${k + 1}`;
      b.title = `Key slice ${k + 1}: ${key.label}`;
      b.addEventListener("click", () => goToKey(k));
      keys.append(b);
    }
    bar.append(keys);
  }
  const reset = document.createElement("button");
  reset.type = "button";
  reset.textContent = "Reset";
  reset.title = "Window, zoom and pan as loaded (double-click an image does the same)";
  reset.addEventListener("click", resetView);
  bar.append(reset);
  if (state.offerView) {
    const use = document.createElement("button");
    use.type = "button";
    use.id = "use-view";
    use.textContent = "Use this view";
    use.title = "Open this case here for everyone: this plane, crosshair and layout";
    use.addEventListener("click", () => {
      if (!state.mm) return;
      state.viewClicks++;
      setValue({ view: { plane: state.plane, mm: state.mm, layout: state.layoutChoice }, n: state.viewClicks });
    });
    bar.append(use);
  }
}

// ----- what tests and benchmarks read ------------------------------------------------------
function report() {
  const failed = state.tiles.filter((t) => t.failed).map((t) => t.label);
  if (failed.length === state.tiles.length) setValue({ failed }); // the page falls back to images
}

window.nmbViewer = {
  /** Where world point `mm` is drawn on tile `i`, in the frame's CSS pixels (NiiVue's own
   * mapping); null if not on its slice. For tests placing the ruler. */
  pointOf: (i, mm) => {
    const t = state.tiles[i];
    const c = t && t.ready ? t.nv.frac2canvasPos(t.nv.mm2frac(mm)) : null;
    if (!c) return null;
    const r = t.canvas.getBoundingClientRect();
    const dpr = t.nv.uiData.dpr || 1;
    return [r.left + c[0] / dpr, r.top + c[1] / dpr];
  },
  state: () => ({
    item: state.item,
    generation: state.generation,
    firstDrawAt: state.firstDrawAt,
    ready: state.tiles.length > 0 && state.tiles.every((t) => t.masksLoaded || t.failed),
    mm: state.mm,
    plane: state.plane,
    preset: state.preset,
    dragFrames: state.dragFrames,
    dragSettle: state.dragSettle,
    keys: state.keys,
    start: state.start,
    layout: state.layoutChoice,
    measured: state.measured,
    roi: state.roi,
    tools: state.tools,
    prefetched: state.prefetched,
    tileSizes: state.tiles.map((t) => [t.el.clientWidth, t.el.clientHeight]),
    tiles: state.tiles.map((t) => ({
      label: t.label,
      ready: t.ready,
      failed: t.failed,
      timings: t.timings,
      masks: t.masksLoaded ? t.nv.volumes.length - 1 : 0,
      ...(t.ready && state.mm ? position(t) : {}),
      ...(t.ready && state.mm ? { overlay: overlay(t) } : {}),
    })),
  }),
};

post("streamlit:componentReady", { apiVersion: 1 });
