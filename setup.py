"""Packaging of alf_rl."""

from setuptools import find_packages, setup

CORE = [
    'tensorflow==2.21.*',
    'tensorflow-probability==0.25.*',
    'tf-keras==2.21.*',
    'gin-config>=0.5.0',
    'absl-py>=2.0',
    'numpy>=1.26',
    'gymnasium>=1.0,<2',
    'tensorboard>=2.21',
]

EXTRAS = {
    'test': ['pytest>=8', 'pytest-xdist>=3.5', 'pygame>=2.5'],
    'render': ['pygame>=2.5', 'imageio>=2.30', 'imageio-ffmpeg>=0.5'],
    # ROMs are bundled with ale-py; gymnasium's AtariPreprocessing (frame
    # resizing) needs opencv.
    'atari': ['ale-py>=0.9', 'opencv-python-headless>=4.8'],
    # gymnasium's MuJoCo environments import imageio (their renderer).
    'mujoco': ['mujoco>=3.0', 'imageio>=2.14'],
    # 'box2d' (2.3.10+) ships wheels; 'box2d-py' needs swig and a compiler.
    'box2d': ['box2d>=2.3.10', 'pygame>=2.5'],
    # Ray actors (AsyncOffPolicyTrainer(actors='ray')); measured with 2.60.
    'dist': ['ray>=2.40'],
    # Runs exported .tflite policies (alf-play --policy, alf_rl.export);
    # without it tf.lite.Interpreter is used.
    'export': ['ai-edge-litert>=2.0'],
    # alf-grid-search --optuna (Bayesian search); measured with 5.0.
    'tune': ['optuna>=4'],
}

setup(
    name='alf_rl',
    version='0.1.0',
    description='A TensorFlow-2-native reinforcement-learning library',
    long_description=open('README.md').read(),
    long_description_content_type='text/markdown',
    license='Apache-2.0',
    # TensorFlow 2.21 has wheels for 3.11-3.13; make test runs the suite on
    # 3.11 and a quick part of it on 3.13.
    python_requires='>=3.11,<3.14',
    classifiers=[
        'Programming Language :: Python :: 3.11',
        'Programming Language :: Python :: 3.12',
        'Programming Language :: Python :: 3.13',
        'License :: OSI Approved :: Apache Software License',
    ],
    packages=find_packages(include=['alf_rl', 'alf_rl.*']),
    install_requires=CORE,
    extras_require=EXTRAS,
    entry_points={
        'console_scripts': [
            'alf-train=alf_rl.bin.train:main',
            'alf-play=alf_rl.bin.play:main',
            'alf-plot=alf_rl.bin.plot:main',
            'alf-export=alf_rl.bin.export:main',
            'alf-grid-search=alf_rl.bin.grid_search:main',
        ],
    },
)
