// Build bundle/viewer.js from src/main.js and the pinned @niivue/niivue (npm ci && npm run build).
import { readFile } from "node:fs/promises";
import { build } from "esbuild";

// NiiVue computes a gradient texture of every volume for lighting in 3-D renderings. This
// viewer draws slices only, and that pass was the slowest step of loading a volume (software
// WebGL: 0.4 s of 1.1 s for a 2 mm volume), so an instance with `nmbSlicesOnly` skips it.
const GRADIENT = "this.gradientTexture = gradientGL({";
const niivueSlicesOnly = {
  name: "niivue-slices-only",
  setup(b) {
    b.onLoad({ filter: /@niivue[\\/]niivue[\\/]build[\\/]niivue[\\/]index\.js$/ }, async (args) => {
      const code = await readFile(args.path, "utf8");
      if (!code.includes(GRADIENT)) throw new Error("NiiVue changed: gradient pass not found; update build.mjs");
      const contents = code.replaceAll(GRADIENT, `this.gradientTexture = this.nmbSlicesOnly ? this.gradientTexture : gradientGL({`);
      return { contents, loader: "js" };
    });
  },
};

await build({
  entryPoints: ["src/main.js"],
  bundle: true,
  minify: !process.env.NMB_DEBUG,
  format: "esm",
  target: "es2020",
  alias: { zarrita: "./src/zarr-stub.js" },
  plugins: [niivueSlicesOnly],
  outfile: "bundle/viewer.js",
});
