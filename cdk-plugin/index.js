'use strict';
// The CDK CLI context provider plugin of gpu-pool (loaded through cdk.json `plugin`): provider
// `plugin` with pluginName `gpu-pool-instance-type-offerings` answers the zones of the stack's
// Region that offer an instance type, `gpu-pool-vcpu-quota` the value of an EC2 vCPU quota of
// the stack's account and Region, `gpu-pool-eks-cluster` what an existing EKS cluster is. The
// AWS calls are the project's Python (boto3, which the `gpu-pool` command already uses):
// `python3 -m gpu_pool.lookups.offerings`, `gpu_pool.lookups.quotas` and
// `gpu_pool.lookups.eks_cluster`, as cdk.json runs the app with `python3`, from the CLI's
// working directory (the project's); GPU_POOL_PYTHON names another interpreter (a virtualenv's
// python, when python3 on PATH is not the app's). The props go in as JSON, the answer comes out
// as JSON; a one-line error becomes the lookup's error, which the app names in its warning
// (gpu_pool/cdk/lookups/context.py). See docs/region.md.

const { spawn } = require('node:child_process');

// Provider name -> [the Python module that answers it, what it looks up]; gpu_pool/cdk/lookups/region.py
// and cluster.py ask for them.
const PROVIDERS = {
  'gpu-pool-instance-type-offerings': ['gpu_pool.lookups.offerings', 'instance type offerings'],
  'gpu-pool-vcpu-quota': ['gpu_pool.lookups.quotas', 'vCPU quota'],
  'gpu-pool-eks-cluster': ['gpu_pool.lookups.eks_cluster', 'EKS cluster'],
};
const TIMEOUT_MS = 120000;
// The interpreter that has gpu_pool and boto3: GPU_POOL_PYTHON, else python3 on PATH.
const PYTHON_ENV = 'GPU_POOL_PYTHON';

function lookUp(module, what, props) {
  return new Promise((resolve, reject) => {
    const python = process.env[PYTHON_ENV] || 'python3';
    const child = spawn(python, ['-m', module], { stdio: 'pipe' });
    // Our own timer, cleared either way: spawn's `timeout` option keeps its timer (and the CLI)
    // alive for the whole timeout when the interpreter cannot be started.
    const timer = setTimeout(() => child.kill(), TIMEOUT_MS);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`gpu-pool: cannot run ${python} for the ${what} lookup (set ${PYTHON_ENV} to the app's Python): ${err.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) {
        try {
          resolve(JSON.parse(stdout));
        } catch (err) {
          reject(new Error(`gpu-pool: the ${what} lookup answered no JSON: ${err.message}`));
        }
      } else {
        reject(new Error(stderr.trim() || `gpu-pool: the ${what} lookup stopped (${signal || `exit ${code}`})`));
      }
    });
    // A child that exits before it reads (EPIPE) says why in its exit code and stderr.
    child.stdin.on('error', () => {});
    child.stdin.end(JSON.stringify(props));
  });
}

// Set in the CLI's process once the provider is registered: the CLI runs the app with its own
// environment, and the app asks the provider only then (gpu_pool/cdk/lookups/region.py PLUGIN_LOADED),
// since a CLI asked for a plugin provider it does not have fails the whole synth.
const LOADED_ENV = 'GPU_POOL_CDK_PLUGIN';

module.exports = {
  version: '1',
  init(host) {
    // registerContextProviderAlpha is experimental (aws-cdk PluginHost): a CLI without it loads
    // the plugin, registers nothing, and the app's synth names the offerings as unchecked.
    if (typeof host.registerContextProviderAlpha !== 'function') {
      return;
    }
    for (const [name, [module, what]] of Object.entries(PROVIDERS)) {
      host.registerContextProviderAlpha(name, { getValue: (props) => lookUp(module, what, props) });
    }
    process.env[LOADED_ENV] = '1';
  },
};
